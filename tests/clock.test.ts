import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, it } from 'vitest';

// One clock (packages/gateway-core/src/clock.ts, packages/ledger/src/clock.ts):
// gateway-core and the ledger read the time through the clock they were given
// (`CreateGatewayOptions.now`, `LedgerOptions.now`), so a test that moves it
// moves leases, outage retries, idempotency and every other decision by the
// time. Only the two clock.ts files read the machine's time (`systemClock`, a
// clock's lead over the machine's). The exceptions, each with its reason:
const MACHINE_TIME: Record<string, string> = {
  'packages/gateway-core/src/observability/log.ts':
    "a log line's timestamp is the machine's, the time of the other processes' logs (PostgreSQL, the devnet, the journal) it is read beside; it decides nothing",
};

// Durations (elapsed ms for traces, logs and metrics) read the machine's
// monotonic time (`performance.now()`): they decide nothing, and a clock moved
// during a call must not turn into a step's duration. Only these files:
const DURATIONS: Record<string, string> = {
  'packages/gateway-core/src/call-timeline.ts': "a trace step's duration",
  'packages/gateway-core/src/calls.ts': "a call's total duration (access log, metrics)",
  'packages/gateway-core/src/wallet-path.ts': "the wallet path's trace steps' durations",
  'packages/gateway-core/src/webhooks/worker.ts': "a delivery attempt's duration (the delivery log)",
  'packages/gateway-core/src/x402/fair-queue.ts': 'how long a settlement waited for its slot, in the error (the timer decides)',
};

const root = resolve(import.meta.dirname, '..');
const SOURCES = ['packages/gateway-core/src', 'packages/ledger/src'];
const CLOCKS = ['packages/gateway-core/src/clock.ts', 'packages/ledger/src/clock.ts'];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** Each line of code (comments removed) of the two packages' sources that matches `pattern`, as `file:line: code`. */
function reads(pattern: RegExp): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const dir of SOURCES)
    for (const file of files(join(root, dir))) {
      const rel = relative(root, file);
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ''))
        .replace(/(^|[^:])\/\/.*$/gm, '$1');
      code.split('\n').forEach((line, i) => {
        if (pattern.test(line)) found.set(rel, [...(found.get(rel) ?? []), `${rel}:${i + 1}: ${line.trim()}`]);
      });
    }
  return found;
}

// `Date.now` (called or passed), `new Date()` without an argument, `Date()`.
const MACHINE_READ = /\bDate\.now\b|\bnew Date\(\s*\)|(^|[^.\w])Date\(\s*\)/;

it("gateway-core and the ledger read the time through their clock: the machine's only in clock.ts and the listed exceptions", () => {
  const found = reads(MACHINE_READ);
  const outside = [...found].filter(([file]) => !CLOCKS.includes(file) && !(file in MACHINE_TIME)).flatMap(([, lines]) => lines);
  expect(outside).toEqual([]);
  // Each clock.ts reads it (its systemClock), and every exception still does (remove it here once it stops).
  expect(CLOCKS.filter((f) => !found.has(f))).toEqual([]);
  expect(Object.keys(MACHINE_TIME).filter((f) => !found.has(f))).toEqual([]);
});

it('durations read the monotonic time only where a duration is measured', () => {
  const found = reads(/\bperformance\.now\b|\bprocess\.hrtime\b/);
  expect([...found].filter(([file]) => !(file in DURATIONS)).flatMap(([, lines]) => lines)).toEqual([]);
  expect(Object.keys(DURATIONS).filter((f) => !found.has(f))).toEqual([]);
});

it('the rule sees a machine time read, and not a clock or a date made from one', () => {
  for (const line of ['const t = Date.now();', 'const now = o.now ?? Date.now;', 'at: new Date().toISOString()', 'String(Date())'])
    expect(MACHINE_READ.test(line), line).toBe(true);
  for (const line of ['at: new Date(now()).toISOString()', 'new Date(row.created_at)', 'const d = Date.parse(s);', 'now: systemClock'])
    expect(MACHINE_READ.test(line), line).toBe(false);
});
