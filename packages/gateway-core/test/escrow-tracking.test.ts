import { createEscrowClient } from '@farebox/escrow';
import { startDevnet } from '@farebox/devnet';
import { expect, it } from 'vitest';
import { createDependencyTracker, trackCalls } from '../src/observability/dependencies.js';
import { createLogger } from '../src/observability/log.js';
import { createMetrics } from '../src/observability/metrics.js';

// The escrow provider as the gateway's settlement sees it (issue 39 item 2):
// its client wrapped by trackCalls, against the devnet's escrow API stopped
// and started again on the same port. One warn line when it goes, one info
// line when it is back, and farebox_dependency_up / _transitions_total move;
// an answer that refuses the request still means the provider is up.
it('the escrow provider going away and coming back is one warn line and one info line, and moves the metrics', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const metrics = createMetrics();
  const deps = createDependencyTracker({
    logger: createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(JSON.parse(l)) } }),
    metrics,
  });
  const sample = async (series: string) => (await metrics.registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  let devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
  const port = Number(new URL(devnet.url).port);
  try {
    const escrow = trackCalls(createEscrowClient({ baseUrl: `${devnet.url}/escrow`, apiKey: 'dev', passphrase: devnet.network.passphrase }), 'escrow', deps);
    const ask = () =>
      escrow.getEscrows(['CAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']).then(
        () => 'answered',
        (e: unknown) => (e as Error).message,
      );
    await ask();
    await expect.poll(() => deps.state('escrow')).toBe('up');
    await devnet.close();
    for (let i = 0; i < 3; i++) await ask();
    await expect.poll(() => deps.state('escrow')).toBe('down');
    expect(await sample('farebox_dependency_up{dependency="escrow"}')).toBe('farebox_dependency_up{dependency="escrow"} 0');
    devnet = await startDevnet({ port, closeIntervalMs: 'instant' });
    await ask();
    await expect.poll(() => deps.state('escrow')).toBe('up');
    expect(lines.filter((l) => l.event === 'dependency').map((l) => [l.level, l.dependency, l.state])).toEqual([
      ['warn', 'escrow', 'down'],
      ['info', 'escrow', 'up'],
    ]);
    expect(await sample('farebox_dependency_transitions_total{dependency="escrow",to="down"}')).toMatch(/ 1$/);
    expect(await sample('farebox_dependency_transitions_total{dependency="escrow",to="up"}')).toMatch(/ 1$/);
  } finally {
    await devnet.close();
  }
});
