import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { ClientError, GatewayApiError, createGatewayClient } from '@farebox/client';
import type { FaultDeployment } from './fault-kit.js';

// The load and the measurements of the fault suite: N callers paying the
// deployment's service through @farebox/client (an Idempotency-Key per call,
// its one retry after a lost connection), a caller whose gateway is gone
// asking another one under the same key; per fault, what the callers saw,
// when the gateways served again, when the money was whole (no hold or lease
// left from before the fault), and the ledger's audit with an exact money
// check.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One answer a caller saw: an HTTP status, or `network` (no answer after the client's retry), or `timeout`. */
export interface Answer {
  t: number;
  gateway: number;
  status: number | 'network' | 'timeout' | 'error';
  /** `error`: what was thrown. */
  error?: string;
  /** The answer carried `Retry-After`. */
  retryAfter: boolean;
  key: string;
}

/** A logical call cut off from its gateway (no answer), and what became of it under the same key elsewhere. */
export interface CutOff {
  key: string;
  at: number;
  /** When a gateway answered it 200 under the same key. */
  servedAt?: number;
  /** The statuses it met on the way (409 while the dead gateway's lease lasted, ...). */
  seen: Array<Answer['status']>;
}

export interface Load {
  answers: Answer[];
  /** Keys the callers saw a 200 for. */
  ok: Set<string>;
  /** Keys whose last answer was a refusal (the call is over, not charged unless a 200 said so). */
  refused: Map<string, number>;
  cutOffs: CutOff[];
  /** Calls under way, by gateway. */
  inFlight: number[];
  /** Waits for the callers to finish their current call and hold still. */
  pause(): Promise<void>;
  resume(): void;
  stop(): Promise<void>;
}

/** Starts `callers` callers over the accounts (round robin) and the live gateways (round robin). */
export function startLoad(d: FaultDeployment, callers: number, giveUpMs = 60_000): Load {
  const clients = d.gateways.map((g) =>
    d.accounts.map((a) => createGatewayClient({ baseUrl: g.url, apiKey: a.key, timeoutMs: 10_000, callRetryWaitMs: 20_000 })),
  );
  const answers: Answer[] = [];
  const ok = new Set<string>();
  const refused = new Map<string, number>();
  const cutOffs: CutOff[] = [];
  const inFlight = d.gateways.map(() => 0);
  let stopped = false;
  let paused: Promise<void> | undefined;
  let resume: (() => void) | undefined;
  const idle = new Set<number>();
  const idleWaiters: Array<() => void> = [];
  const liveFrom = (i: number) => {
    for (let j = 0; j < d.gateways.length; j++) {
      const g = (i + j) % d.gateways.length;
      if (!d.gateways[g]!.dead) return g;
    }
    return i % d.gateways.length;
  };

  async function oneCall(caller: number, account: number): Promise<void> {
    const key = randomUUID();
    const started = Date.now();
    let g = liveFrom(caller);
    let cut: CutOff | undefined;
    for (;;) {
      let status: Answer['status'];
      let retryAfter = false;
      let error: string | undefined;
      inFlight[g]!++;
      try {
        await clients[g]![account]!.call(d.service, { caller }, { idempotencyKey: key });
        status = 200;
      } catch (e) {
        if (e instanceof GatewayApiError) {
          status = e.status;
          retryAfter = e.retryAfterSeconds !== undefined;
        } else if (e instanceof ClientError && e.code === 'NETWORK') status = e.data.timedOut ? 'timeout' : 'network';
        else {
          status = 'error';
          error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
        }
      } finally {
        inFlight[g]!--;
      }
      answers.push({ t: Date.now(), gateway: g, status, retryAfter, key, ...(error ? { error } : {}) });
      if (cut) cut.seen.push(status);
      if (status === 200) {
        ok.add(key);
        if (cut) cut.servedAt = Date.now();
        return;
      }
      const unanswered = status === 'network' || status === 'timeout' || status === 'error' || status === 409;
      if (!unanswered || Date.now() - started > giveUpMs) {
        refused.set(key, typeof status === 'number' ? status : 0);
        // A refusal is an answer: the caller backs off a little before its next call.
        await sleep(100);
        return;
      }
      // No answer: the same key, on a live gateway (another one when this one is gone), until one answers.
      if (status !== 409 && !cut) {
        cut = { key, at: Date.now(), seen: [status] };
        cutOffs.push(cut);
      }
      g = liveFrom(g + (status === 409 ? 0 : 1));
      await sleep(status === 409 ? 1000 : 100);
    }
  }

  const workers = Array.from({ length: callers }, async (_, caller) => {
    const account = caller % d.accounts.length;
    while (!stopped) {
      if (paused) {
        idle.add(caller);
        for (const w of idleWaiters.splice(0)) w();
        await paused;
        idle.delete(caller);
        continue;
      }
      await oneCall(caller, account);
    }
  });
  const allIdle = () =>
    new Promise<void>((resolve) => {
      const check = () => (idle.size === callers ? resolve() : idleWaiters.push(check));
      check();
    });
  return {
    answers,
    ok,
    refused,
    cutOffs,
    inFlight,
    async pause() {
      paused ??= new Promise((r) => (resume = r));
      await allIdle();
    },
    resume() {
      const r = resume;
      paused = undefined;
      resume = undefined;
      r?.();
    },
    async stop() {
      stopped = true;
      this.resume();
      await Promise.all(workers);
    },
  };
}

/** `/health/ready` of every live gateway, polled: when each answered 200. */
export function watchReadiness(d: FaultDeployment): {
  readySince(gateway: number): number | undefined;
  last(gateway: number): { status: number; body: string } | undefined;
  stop(): void;
} {
  const since = new Map<number, number | undefined>();
  const last = new Map<number, { status: number; body: string }>();
  let stopped = false;
  void (async () => {
    while (!stopped) {
      await Promise.all(
        d.gateways.map(async (g, i) => {
          if (g.dead) return;
          const r = await fetch(`${g.url}/health/ready`, { signal: AbortSignal.timeout(2000) }).then(
            async (res) => ({ status: res.status, body: await res.text() }),
            () => ({ status: 0, body: '' }),
          );
          last.set(i, r);
          if (r.status !== 200) since.set(i, undefined);
          else if (since.get(i) === undefined) since.set(i, Date.now());
        }),
      );
      await sleep(200);
    }
  })();
  return { readySince: (i) => since.get(i), last: (i) => last.get(i), stop: () => void (stopped = true) };
}

/**
 * Pending holds and leased idempotency keys (in progress, the lease not over
 * or released) of the deployment's accounts, by id; with `instances`, only
 * those the ledger instances with these ids placed (one gateway's).
 */
export async function unsettled(db: pg.Client, d: FaultDeployment, instances?: string[]): Promise<{ holds: string[]; leases: string[] }> {
  const ids = d.accounts.map((a) => a.id);
  const mine = instances ? ' AND instance_id = ANY($2::bigint[])' : '';
  const params = instances ? [ids, instances] : [ids];
  const holds = await db.query<{ id: string }>(`SELECT id::text FROM holds WHERE state = 'pending' AND account_id = ANY($1)${mine}`, params);
  const leases = await db.query<{ k: string }>(
    `SELECT account_id || '/' || key AS k FROM idempotency_keys WHERE state = 'in_progress' AND locked_until > now() AND account_id = ANY($1)${mine}`,
    params,
  );
  return { holds: holds.rows.map((r) => r.id), leases: leases.rows.map((r) => r.k) };
}

/** The ledger instances (ids) gateway `i` joined as (`ledger_instances`, named `<host> pid <pid>`); undefined where the ledger has no instances. */
export async function instancesOf(db: pg.Client, d: FaultDeployment, i: number): Promise<string[] | undefined> {
  try {
    const { rows } = await db.query<{ id: string }>(`SELECT id::text FROM ledger_instances WHERE name = $1`, [
      `${hostname()} pid ${d.gateways[i]!.process.child.pid}`,
    ]);
    return rows.map((r) => r.id);
  } catch {
    return undefined;
  }
}

/** Waits (up to `withinMs`) until none of `before` is pending or leased any more; the ms it took, or undefined when it did not happen. */
export async function settledAfter(
  db: () => Promise<pg.Client>,
  d: FaultDeployment,
  before: { holds: string[]; leases: string[] },
  from: number,
  withinMs: number,
) {
  for (;;) {
    try {
      const now = await unsettled(await db(), d);
      const holds = before.holds.filter((h) => now.holds.includes(h)).length;
      const leases = before.leases.filter((k) => now.leases.includes(k)).length;
      if (holds === 0 && leases === 0) return { ms: Date.now() - from, holds: 0, leases: 0 };
      if (Date.now() - from > withinMs) return { ms: undefined, holds, leases };
    } catch {
      if (Date.now() - from > withinMs) return { ms: undefined, holds: before.holds.length, leases: before.leases.length };
    }
    await sleep(250);
  }
}

export interface MoneyCheck {
  /** What the accounts were given (sign-up credit). */
  start: bigint;
  credits: bigint;
  held: bigint;
  spent: bigint;
  /** credits + held + spent === start */
  exact: boolean;
  /** Posted holds (calls charged), and the keys charged more than once. */
  charged: number;
  doubleCharged: number;
  /** Calls charged whose caller never saw a 200. */
  chargedUnseen: number;
  /** Calls the callers saw refused that were charged. */
  chargedRefused: number;
  /** Posted holds by Idempotency-Key. */
  postedByKey: Map<string, number>;
  /** The keys of `chargedRefused`. */
  chargedRefusedKeys: string[];
}

/** The money of the deployment's accounts, in one statement (one snapshot). */
export async function moneyCheck(db: pg.Client, d: FaultDeployment, load: Load): Promise<MoneyCheck> {
  const ids = d.accounts.map((a) => a.id);
  const { rows } = await db.query<{ credits: string; held: string; spent: string }>(
    `SELECT (SELECT coalesce(sum(balance), 0) FROM accounts WHERE id = ANY($1))::text AS credits,
            (SELECT coalesce(sum(amount), 0) FROM holds WHERE state = 'pending' AND account_id = ANY($1))::text AS held,
            (SELECT coalesce(sum(posted_amount), 0) FROM holds WHERE state = 'posted' AND account_id = ANY($1))::text AS spent`,
    [ids],
  );
  const posted = await db.query<{ key: string | null; n: string }>(
    `SELECT idempotency_key AS key, count(*)::text AS n FROM holds WHERE state = 'posted' AND account_id = ANY($1) GROUP BY idempotency_key`,
    [ids],
  );
  const start = d.credit * BigInt(d.accounts.length);
  const credits = BigInt(rows[0]!.credits);
  const held = BigInt(rows[0]!.held);
  const spent = BigInt(rows[0]!.spent);
  let charged = 0;
  let doubleCharged = 0;
  let chargedUnseen = 0;
  let chargedRefused = 0;
  const chargedRefusedKeys: string[] = [];
  const postedByKey = new Map<string, number>();
  for (const r of posted.rows) {
    const n = Number(r.n);
    charged += n;
    if (r.key === null) continue;
    postedByKey.set(r.key, n);
    if (n > 1) doubleCharged++;
    if (!load.ok.has(r.key)) chargedUnseen++;
    if (load.refused.has(r.key)) {
      chargedRefused++;
      chargedRefusedKeys.push(r.key);
    }
  }
  return {
    start,
    credits,
    held,
    spent,
    exact: credits + held + spent === start,
    charged,
    doubleCharged,
    chargedUnseen,
    chargedRefused,
    postedByKey,
    chargedRefusedKeys,
  };
}

/** The ledger's audit (`verify()`) through the operator API of a live gateway. */
export async function ledgerAudit(d: FaultDeployment): Promise<{ ok: boolean; mismatches: number; detail: string }> {
  const live = d.gateways.find((g) => !g.dead)!;
  const r = await createGatewayClient({ baseUrl: live.url, apiKey: d.operatorKey }).operator.reconciliation();
  return {
    ok: r.ledger.ok,
    mismatches: r.ledger.mismatches.length,
    detail: r.ledger.mismatches
      .slice(0, 3)
      .map((m) => `${m.kind} ${m.id}: expected ${m.expected}, got ${m.actual}`)
      .join('; '),
  };
}

/** Answers by status, `200×812 503×40 (Retry-After) network×2`. */
export function countByStatus(answers: readonly Answer[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of answers) {
    const k = `${a.status}${typeof a.status === 'number' && a.status !== 200 ? (a.retryAfter ? ' Retry-After' : ' no Retry-After') : ''}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

export const formatCounts = (c: Record<string, number>) =>
  Object.entries(c)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ') || 'none';
