import pg from 'pg';
import type { FaultDeployment } from './fault-kit.js';
import {
  countByStatus,
  formatCounts,
  instancesOf,
  ledgerAudit,
  moneyCheck,
  settledAfter,
  unsettled,
  watchReadiness,
  type Answer,
  type CutOff,
  type Load,
  type MoneyCheck,
} from './fault-run.js';

// The faults of the fault suite, one after the other on one deployment under
// load (`pnpm bench faults`, faults.pg.test.ts): Redis killed for a while,
// PostgreSQL killed for a while, one gateway killed for good. Each gives back
// what it measured; `report` prints it.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FaultResult {
  name: string;
  /** When the fault began (the kill) and ended (the dependency accepts connections again; the kill itself for a gateway). */
  at: number;
  back: number;
  /** When the killed dependency was started again (its process launched; it accepts connections at `back`): the outage is `at` to here. */
  restartAt: number;
  /** Every answer the callers saw from the kill until the gateways served again (and a second more). */
  answers: Answer[];
  /** The readiness answers of the live gateways during the outage (status and body), sampled. */
  readiness: Array<{ gateway: number; status: number; body: string }>;
  /** ms from `back` until every live gateway answered ready and served a call; undefined: not within the bound. */
  recoverMs: number | undefined;
  /** ms from the kill until no hold and no lease open at `back` remained (a killed gateway's own: those it placed); undefined: not within the bound (then what was left). */
  wholeMs: number | undefined;
  left: { holds: number; leases: number };
  /** Holds and leases open at `back` (a killed gateway's own, when `ofDeadGateway`). */
  open: { holds: number; leases: number };
  ofDeadGateway: boolean;
  cutOffs: CutOff[];
  /** What the gateways said meanwhile (dependency and liveness lines, warnings, errors). */
  said: Array<{ gateway: number; line: string }>;
  audit: { ok: boolean; mismatches: number; detail: string };
  money: MoneyCheck;
}

export interface FaultOptions {
  /** How long a killed dependency stays down, ms. */
  outageMs: number;
  /** The longest wait for recovery and for whole money, ms. */
  boundMs: number;
  log?: (line: string) => void;
}

/** A client of the deployment's own PostgreSQL that reconnects after it was killed. */
function database(d: FaultDeployment) {
  let client: pg.Client | undefined;
  const get = async () => {
    if (client) return client;
    const c = new pg.Client({ connectionString: d.postgres.url, connectionTimeoutMillis: 2000 });
    c.on('error', () => {
      if (client === c) client = undefined;
    });
    await c.connect();
    client = c;
    return c;
  };
  return {
    get,
    async close() {
      await client?.end().catch(() => undefined);
      client = undefined;
    },
  };
}

async function fault(
  d: FaultDeployment,
  load: Load,
  name: string,
  options: FaultOptions,
  kill: () => Promise<void>,
  bringBack: (() => Promise<void>) | undefined,
  /** A killed gateway: whole money is its holds and leases given back (not those of live gateways). */
  gateway?: number,
  /** Waits for the moment to strike (before the clock starts). */
  prepare?: () => Promise<void>,
): Promise<FaultResult> {
  const say = options.log ?? (() => undefined);
  const db = database(d);
  const ready = watchReadiness(d);
  try {
    say(`${name}: kill -9`);
    const firstAnswer = load.answers.length;
    const firstSaid = d.said.length;
    const cutOffsBefore = load.cutOffs.length;
    await prepare?.();
    // The dead gateway's ledger instances, read while it still has them (a survivor drops them once it gave back what they held).
    const instances = gateway === undefined ? undefined : await instancesOf(await db.get(), d, gateway);
    const at = Date.now();
    await kill();
    const readiness: FaultResult['readiness'] = [];
    let restartAt: number | undefined;
    if (bringBack) {
      // Readiness during the outage, twice a second.
      while (Date.now() - at < options.outageMs) {
        await sleep(500);
        d.gateways.forEach((g, i) => {
          const r = ready.last(i);
          if (!g.dead && r) readiness.push({ gateway: i, ...r });
        });
      }
      say(`${name}: starting it again`);
      restartAt = Date.now();
      await bringBack();
    }
    const back = Date.now();
    restartAt ??= back;
    let open = { holds: [] as string[], leases: [] as string[] };
    try {
      open = await unsettled(await db.get(), d, instances);
    } catch {
      // The database is not reachable yet: whatever is open is measured below.
    }
    // Recovered: every live gateway is ready and has served a call since `back`.
    let recoverMs: number | undefined;
    const live = d.gateways.map((g, i) => (g.dead ? -1 : i)).filter((i) => i >= 0);
    while (Date.now() - back < options.boundMs) {
      const served = live.every((i) => load.answers.some((a, j) => j >= firstAnswer && a.gateway === i && a.status === 200 && a.t >= back));
      const isReady = live.every((i) => ready.last(i)?.status === 200);
      if (served && isReady) {
        recoverMs = Date.now() - back;
        break;
      }
      await sleep(100);
    }
    say(`${name}: ${recoverMs === undefined ? `not recovered within ${options.boundMs} ms` : `recovered ${recoverMs} ms after it was back`}`);
    const end = Date.now() + 1000;
    const settled = await settledAfter(db.get, d, open, at, options.boundMs);
    say(`${name}: ${settled.ms === undefined ? `money not whole within ${options.boundMs} ms` : `money whole ${settled.ms} ms after the kill`}`);
    await sleep(Math.max(0, end - Date.now()));
    const answers = load.answers.slice(firstAnswer).filter((a) => a.t <= Math.max(end, back + (recoverMs ?? 0) + 1000));
    // The audit and the money check on a ledger at rest: the callers finish their calls and wait.
    await load.pause();
    const audit = await ledgerAudit(d).catch((e: unknown) => ({ ok: false, mismatches: -1, detail: `audit failed: ${(e as Error).message}` }));
    const money = await moneyCheck(await db.get(), d, load);
    load.resume();
    return {
      name,
      at,
      back,
      restartAt,
      answers,
      readiness,
      recoverMs,
      wholeMs: settled.ms,
      left: { holds: settled.holds, leases: settled.leases },
      open: { holds: open.holds.length, leases: open.leases.length },
      ofDeadGateway: instances !== undefined,
      cutOffs: load.cutOffs.slice(cutOffsBefore),
      said: d.said.slice(firstSaid).map(({ gateway, line }) => ({ gateway, line })),
      audit,
      money,
    };
  } finally {
    ready.stop();
    await db.close();
  }
}

export const redisFault = (d: FaultDeployment, load: Load, o: FaultOptions) =>
  fault(
    d,
    load,
    `Redis killed for ${o.outageMs / 1000} s`,
    o,
    () => d.redis.kill(),
    () => d.redis.start(),
  );

export const postgresFault = (d: FaultDeployment, load: Load, o: FaultOptions) =>
  fault(
    d,
    load,
    `PostgreSQL killed for ${o.outageMs / 1000} s`,
    o,
    () => d.postgres.kill(),
    () => d.postgres.start(),
  );

/** Kills gateway `i` for good, mid-load: once it has calls under way (half its share of those in flight, or after 10 s whatever it has). */
export const gatewayFault = (d: FaultDeployment, load: Load, o: FaultOptions, i: number) =>
  fault(
    d,
    load,
    `gateway ${i + 1} of ${d.gateways.length} killed`,
    o,
    () => d.killGateway(i),
    undefined,
    i,
    async () => {
      // The load back in full after the last fault's check, then a moment when this gateway has its share of calls under way.
      await sleep(1000);
      const want = Math.max(1, Math.floor(load.inFlight.reduce((a, b) => a + b, 0) / (2 * d.gateways.length)));
      for (const until = Date.now() + 10_000; load.inFlight[i]! < want && Date.now() < until; ) await sleep(5);
    },
  );

/** The calls of this fault that were charged though their caller was refused: what they were answered, when. */
function refusedButCharged(r: FaultResult): string[] {
  const keys = new Set(r.money.chargedRefusedKeys);
  const seen = r.answers.filter((a) => keys.has(a.key));
  if (seen.length === 0) return [];
  const at = seen.map((a) => `${a.status}${a.retryAfter ? ' Retry-After' : ''} at +${((a.t - r.at) / 1000).toFixed(2)} s (gateway ${a.gateway + 1})`);
  return [`  of them answered during this fault (charged, though refused): ${at.join(', ')}`];
}

/** A readiness body in short: its status and what is not ok (`degraded; redis: down`). */
function readinessSummary(body: string): string {
  try {
    const b = JSON.parse(body) as { status?: string; reasons?: string[]; checks?: Record<string, string> };
    const notOk = Object.entries(b.checks ?? {})
      .filter(([, v]) => v !== 'ok' && !/^ledger \d+$/.test(v))
      .map(([k, v]) => `${k}: ${v}`)
      .sort();
    return [b.status ?? '?', ...notOk].join('; ');
  } catch {
    return body.slice(0, 80);
  }
}

/** A gateway's JSON log line as `warn redis is down: ...`. */
function sayLine(line: string): string {
  try {
    const j = JSON.parse(line) as { level?: number | string; msg?: string };
    const level =
      typeof j.level === 'number' ? (({ 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' } as Record<number, string>)[j.level] ?? j.level) : j.level;
    return `${level} ${j.msg ?? line}`.slice(0, 200);
  } catch {
    return line.slice(0, 200);
  }
}

const s = (ms: number | undefined) => (ms === undefined ? 'not within the bound' : `${(ms / 1000).toFixed(1)} s`);
const usd = (units: bigint) => `${(Number(units) / 10_000_000).toFixed(4)} USD`;

/** The lines a fault's result prints as. */
export function report(r: FaultResult): string[] {
  const served = r.cutOffs.filter((c) => c.servedAt !== undefined);
  const slowest = served.reduce((m, c) => Math.max(m, c.servedAt! - c.at), 0);
  const readiness = new Map<string, number>();
  for (const x of r.readiness) {
    const k = `${x.status} ${readinessSummary(x.body)}`;
    readiness.set(k, (readiness.get(k) ?? 0) + 1);
  }
  const m = r.money;
  return [
    `--- ${r.name}`,
    `  answers callers saw (kill until served again + 1 s): ${formatCounts(countByStatus(r.answers))}`,
    ...(r.readiness.length ? [`  /health/ready during the outage: ${[...readiness].map(([k, n]) => `${n}x ${k}`).join(' | ')}`] : []),
    `  time to recover (every live gateway ready and serving, from the moment it was back): ${s(r.recoverMs)}`,
    r.ofDeadGateway
      ? `  holds / leases of the dead gateway at the kill: ${r.open.holds} / ${r.open.leases}`
      : `  holds / leases open when it was back: ${r.open.holds} / ${r.open.leases}`,
    `  time until money is whole (those holds resolved, those leases released, from the kill): ${s(r.wholeMs)}${r.wholeMs === undefined ? ` (${r.left.holds} holds and ${r.left.leases} leases still open)` : ''}`,
    ...(r.cutOffs.length
      ? [
          `  calls cut off without an answer: ${r.cutOffs.length}; answered 200 later under the same key: ${served.length} (slowest after ${s(slowest)}); met on the way: ${formatCounts(
            r.cutOffs
              .flatMap((c) => c.seen)
              .reduce<Record<string, number>>((o, x) => {
                o[String(x)] = (o[String(x)] ?? 0) + 1;
                return o;
              }, {}),
          )}; charged: ${r.cutOffs.map((c) => m.postedByKey.get(c.key) ?? 0).join(' ')}`,
        ]
      : []),
    ...(r.said.length
      ? [`  the gateways said (${r.said.length} lines):`, ...r.said.slice(0, 8).map((x) => `    gateway ${x.gateway + 1}: ${sayLine(x.line)}`)]
      : ['  the gateways said nothing about it']),
    `  verify(): ${r.audit.ok ? 'ok' : `NOT ok (${r.audit.mismatches} mismatches${r.audit.detail ? `: ${r.audit.detail}` : ''})`}`,
    `  money: credits ${usd(m.credits)} + held ${usd(m.held)} + spent ${usd(m.spent)} = ${usd(m.credits + m.held + m.spent)} against ${usd(m.start)} given: ${m.exact ? 'exact' : 'NOT EXACT'}`,
    `  charged ${m.charged} calls; charged twice under one key: ${m.doubleCharged}; charged with no 200 seen: ${m.chargedUnseen}; charged though refused: ${m.chargedRefused}`,
    ...refusedButCharged(r),
  ];
}
