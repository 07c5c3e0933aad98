import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/buffered-log.ts', import.meta.url));

it('a buffered logger writes a lone line within its flush interval and every line by exit', async () => {
  const child = spawn(process.execPath, ['--conditions=@farebox/source', '--import', 'tsx', fixture], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let beforePause: string | undefined;
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => {
    if (String(d).includes('paused')) beforePause = out;
  });
  const code = await new Promise((r) => child.once('exit', r));
  expect(code).toBe(0);
  // The first line was out before the burst started (400 ms later), not held for the buffer to fill.
  expect(beforePause).toContain('"msg":"alone"');
  const lines = out.trim().split('\n').map((l) => JSON.parse(l) as { n: number; msg: string });
  expect(lines.map((l) => l.n)).toEqual(Array.from({ length: 501 }, (_, i) => i));
}, 30_000);
