import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@farebox/test-kit';
import { startFaultDeployment, type FaultDeployment } from './fault-kit.js';
import { startLoad, type Load } from './fault-run.js';
import { gatewayFault, postgresFault, redisFault, report, type FaultResult } from './fault-suite.js';

// The bounded part of `pnpm bench faults`: docs/deploy.md's deployment on
// this machine (its own PostgreSQL and Redis on spare ports, two gateways as
// processes, a loopback service), 16 callers paying through @farebox/client
// with an Idempotency-Key per call, and each dependency killed with SIGKILL
// mid-load. What callers and the money must show (issue 39's acceptance).

const OUTAGE_MS = 5000;

describe('faults under load: two gateways on their own PostgreSQL and Redis, 16 callers', () => {
  let d: FaultDeployment;
  let load: Load;
  const print = (r: FaultResult) => console.log(report(r).join('\n'));

  beforeAll(async () => {
    d = await startFaultDeployment({ gateways: 2, accounts: 4, callTimeoutMs: 3000 });
    load = startLoad(d, 16, 30_000);
    await eventually('the load is running on both gateways', () => [0, 1].every((g) => load.answers.some((a) => a.gateway === g && a.status === 200)), {
      timeoutMs: 30_000,
    });
  }, 120_000);

  afterAll(async () => {
    await load?.stop();
    await d?.close();
  }, 60_000);

  it('Redis killed for 5 s: every call keeps being answered 200; the money stays exact', async () => {
    const r = await redisFault(d, load, { outageMs: OUTAGE_MS, boundMs: 15_000 });
    print(r);
    expect(r.answers.length).toBeGreaterThan(0);
    expect(r.answers.filter((a) => a.status !== 200).map((a) => a.status)).toEqual([]);
    expect(r.recoverMs).toBeDefined();
    expect(r.audit).toMatchObject({ ok: true });
    expect(r.money.exact).toBe(true);
  }, 60_000);

  it('PostgreSQL killed for 5 s: 503 with Retry-After during the outage, nothing charged for them, served again without restarting a gateway', async () => {
    const r = await postgresFault(d, load, { outageMs: OUTAGE_MS, boundMs: 20_000 });
    print(r);
    // Calls under way at the kill may still end either way in its first second; after that, the outage's answer. A call
    // whose service had answered waits out the outage to be charged (15 s, answering 200 once the database is back), so
    // when every caller is in such a call no answer comes during the outage at all (seen in CI: all 16 leases open at
    // the end); db-outage.pg.test.ts shows the 503 of a call begun during an outage deterministically. Under load, every
    // answer is a 200 or a 503 with Retry-After, and nothing else. The outage ends when PostgreSQL is launched again
    // (`restartAt`): the gateways may serve 200s again before the kit has seen it accept connections (`back`).
    const during = r.answers.filter((a) => a.t >= r.at + 1000 && a.t <= r.restartAt);
    expect(during.filter((a) => !(a.status === 503 && a.retryAfter)).map((a) => `${a.status}${a.retryAfter ? ' Retry-After' : ''}`)).toEqual([]);
    expect(r.answers.filter((a) => !(a.status === 200 || (a.status === 503 && a.retryAfter))).map((a) => `${a.status}`)).toEqual([]);
    expect(r.answers.length).toBeGreaterThan(0);
    expect(r.recoverMs).toBeDefined();
    expect(d.gateways.map((g) => g.process.child.exitCode)).toEqual([null, null]);
    expect(r.money.chargedRefused).toBe(0);
    expect(r.money.chargedUnseen).toBe(0);
    expect(r.audit).toMatchObject({ ok: true });
    expect(r.money.exact).toBe(true);
  }, 60_000);

  it('one of two gateways killed mid-load: its holds voided and leases released within 15 s; each call cut off is answered on the survivor under its key, charged once', async () => {
    const r = await gatewayFault(d, load, { outageMs: 0, boundMs: 20_000 }, 1);
    print(r);
    expect(r.wholeMs).toBeDefined();
    expect(r.wholeMs!).toBeLessThanOrEqual(15_000);
    expect(r.cutOffs.length).toBeGreaterThan(0);
    expect(r.cutOffs.filter((c) => c.servedAt === undefined).map((c) => c.seen.join(' '))).toEqual([]);
    expect(r.cutOffs.map((c) => r.money.postedByKey.get(c.key) ?? 0)).toEqual(r.cutOffs.map(() => 1));
    expect(r.money.doubleCharged).toBe(0);
    expect(r.money.chargedUnseen).toBe(0);
    expect(r.audit).toMatchObject({ ok: true });
    expect(r.money.exact).toBe(true);
  }, 90_000);
});
