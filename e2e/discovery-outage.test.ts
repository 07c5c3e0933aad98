import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { startGateway, type RunningGateway } from '@farebox/gateway';
import { createLogger } from '@farebox/gateway-core';
import type { RunningDiscovery } from '@farebox/discovery-service';
import { eventually } from '@farebox/test-kit';
import { startReplica } from './discovery-replica.js';

// A gateway searching through a discovery backend (FAREBOX_DISCOVERY_URL)
// whose backend stops and comes back (issue 39, items 1 and 2): readiness
// stays 200, naming the backend degraded with its effect; one warn line when
// it goes and one info line when it is back; farebox_dependency_up moves.

describe('the discovery backend goes away and comes back', () => {
  let devnet: Devnet;
  let discovery: RunningDiscovery;
  let gateway: RunningGateway;
  const lines: Array<Record<string, unknown>> = [];
  let dataDir: string;
  let port: number;
  // Restarted on the port it had (the gateway's FAREBOX_DISCOVERY_URL stays right).
  const start = () => startReplica(devnet.url, dataDir, { port });
  type Ready = { status: string; dependencies: Record<string, { state: string; required: boolean; reason?: string; effect?: string }> };
  const ready = async () => {
    const res = await fetch(`${gateway.url}/health/ready`);
    return { status: res.status, body: (await res.json()) as Ready };
  };
  const gauge = async () =>
    (await (await fetch(`${gateway.url}/metrics`, { headers: { authorization: 'Bearer discovery-outage-metrics-token' } })).text())
      .split('\n')
      .find((l) => l.startsWith('farebox_dependency_up{dependency="discovery"} '));

  beforeAll(async () => {
    devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
    dataDir = await mkdtemp(join(tmpdir(), 'farebox-disc-outage-'));
    port = 0;
    discovery = await start();
    port = Number(new URL(discovery.url).port);
    gateway = await startGateway({
      port: 0,
      network: 'local',
      devnetUrl: devnet.url,
      dataDir: await mkdtemp(join(tmpdir(), 'farebox-gw-')),
      metricsToken: 'discovery-outage-metrics-token',
      logger: createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(JSON.parse(l)) } }),
      env: { FAREBOX_DISCOVERY_URL: discovery.url },
    });
    await gateway.core.start();
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await discovery?.close();
    await devnet?.close();
  });

  it('readiness stays 200 naming it degraded with its effect; one warn line when it goes, one info line when it is back', async () => {
    await eventually('the backend is up', async () => (await ready()).body.dependencies.discovery?.state === 'up', { timeoutMs: 30_000 });
    await discovery.close();
    const down = await eventually('the gateway sees the backend gone', async () => {
      const r = await ready();
      return r.body.dependencies.discovery?.state === 'down' ? r : undefined;
    });
    expect(down.status).toBe(200);
    expect(down.body.status).toBe('degraded');
    expect(down.body.dependencies.discovery).toMatchObject({
      required: false,
      effect: 'search (GET /v1/agents?q=, the MCP search) answers 500; listing and calls go on',
    });
    expect(await gauge()).toBe('farebox_dependency_up{dependency="discovery"} 0');
    // Asked again and again while it is gone: still one line.
    for (let i = 0; i < 3; i++) expect((await ready()).status).toBe(200);

    discovery = await start();
    await eventually('the gateway sees the backend back', async () => (await ready()).body.dependencies.discovery?.state === 'up', { timeoutMs: 30_000 });
    expect(await gauge()).toBe('farebox_dependency_up{dependency="discovery"} 1');
    expect(lines.filter((l) => l.event === 'dependency' && l.dependency === 'discovery').map((l) => [l.level, l.state])).toEqual([
      ['warn', 'down'],
      ['info', 'up'],
    ]);
  });
});
