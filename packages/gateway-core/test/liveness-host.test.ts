import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { expect, it } from 'vitest';
import { goneFromThisHost } from '../src/runtime/liveness.js';

// Which instances on the database a gateway takes for gone without waiting
// for the liveness timeout: one of this host whose process no longer runs,
// or one under its own name (a restarted container keeps its host name and
// often its pid). Never one of another host, or a process that runs.
it('takes for gone an instance of this host whose process ended or that bears its own name, never another host or a live process', () => {
  const host = hostname();
  const ended = spawnSync(process.execPath, ['-e', '0']).pid;
  expect(goneFromThisHost(`${host} pid ${ended}`)).toBe(true);
  expect(goneFromThisHost(`${host} pid ${process.pid}`)).toBe(true);
  expect(goneFromThisHost(`${host} pid ${process.ppid}`)).toBe(false);
  expect(goneFromThisHost(`another-${host} pid ${ended}`)).toBe(false);
  expect(goneFromThisHost('sweeper')).toBe(false);
});
