import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { createLogger } from '@farebox/gateway-core';
import { isoTime } from '../src/observability/iso-time.js';
import { eventually } from '@farebox/test-kit';

const fixture = fileURLToPath(new URL('./fixtures/buffered-log.ts', import.meta.url));

it('a buffered logger writes a lone line within its flush interval, and every line when the process stops as the gateway does', async () => {
  const child = spawn(process.execPath, ['--conditions=@farebox/source', '--import', 'tsx', fixture], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let beforePause: string | undefined;
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => {
    if (String(d).includes('paused')) beforePause = out;
  });
  const closed = new Promise((r) => child.once('close', r));
  // The lone line comes out while nothing else is logged (the flush interval), not held for the buffer to fill; then the burst.
  await eventually('the lone line is written on its own', () => out.includes('"msg":"alone"'), { timeoutMs: 10_000 });
  child.stdin.end('go\n');
  expect(await closed).toBe(0);
  expect(beforePause).toContain('"msg":"alone"');
  const lines = out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { n: number; msg: string; pad?: string });
  expect(lines.map((l) => l.n)).toEqual(Array.from({ length: 501 }, (_, i) => i));
  expect(lines.slice(1).every((l) => l.pad === `${'x'.repeat(300)} é € 😀`)).toBe(true);
}, 30_000);

it('censors fields named like secrets, at the top of a line and nested, and leaves what was logged as it was', () => {
  const lines: string[] = [];
  const logger = createLogger({ destination: { write: (line: string) => void lines.push(line) } });
  const logged = {
    token: 'tok-1',
    user: { name: 'ann', password: 'pw-1' },
    req: { headers: { authorization: 'Bearer sk-1', cookie: 'sid=c-1', accept: 'application/json' } },
    steps: { hold_credits: 0.5 },
  };
  logger.info(logged, 'call');
  const err = Object.assign(new Error('boom'), { config: { headers: { authorization: 'Bearer sk-2' } } });
  logger.warn({ err }, 'failed');
  logger.child({ secret: 's-1', region: 'eu' }).info({ access_token: 'at-1' }, 'child');

  const all = lines.join('');
  for (const secret of ['tok-1', 'pw-1', 'sk-1', 'c-1', 'sk-2', 's-1', 'at-1']) expect(all).not.toContain(secret);
  const [call, failed, child] = lines.map((l) => JSON.parse(l));
  expect(call).toMatchObject({
    msg: 'call',
    token: '[redacted]',
    user: { name: 'ann', password: '[redacted]' },
    req: { headers: { authorization: '[redacted]', cookie: '[redacted]', accept: 'application/json' } },
    steps: { hold_credits: 0.5 },
  });
  // The error keeps what makes it useful.
  expect(failed.err).toMatchObject({ type: 'Error', message: 'boom', config: { headers: { authorization: '[redacted]' } } });
  expect(failed.err.stack).toContain('boom');
  expect(child).toMatchObject({ msg: 'child', region: 'eu', secret: '[redacted]', access_token: '[redacted]' });
  // The caller's objects are untouched.
  expect(logged.req.headers.authorization).toBe('Bearer sk-1');
  expect(err.config.headers.authorization).toBe('Bearer sk-2');
});

it('writes times as toISOString does, across seconds, days and years', () => {
  const start = Date.UTC(2026, 11, 31, 23, 59, 58, 990);
  const times = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 253_402_300_799_999, 253_402_300_800_000];
  for (let ms = start; ms < start + 2_050; ms += 7) times.push(ms);
  // Back and forth across a second, as lines from calls that began at different moments are.
  times.push(start + 1_000, start + 10, start + 1_011);
  for (const ms of times) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
  const lines: string[] = [];
  createLogger({ destination: { write: (line: string) => void lines.push(line) } }).info('now');
  const time = JSON.parse(lines[0]!).time as string;
  expect(new Date(time).toISOString()).toBe(time);
  expect(Math.abs(Date.parse(time) - Date.now())).toBeLessThan(5_000);
});
