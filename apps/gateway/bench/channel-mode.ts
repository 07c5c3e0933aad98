// `BENCH_CHANNEL=1 pnpm bench gateway` (calls.ts runs this after its warm-up): MPP channel calls against
// credit calls on the same gateway build and run, in ABBA turns (PAIRED_TURN_MS, PAIRED_ROUNDS: 80 pairs of
// 500 ms by default). Credits: the bench's API keys, `concurrency` workers. Channel: `concurrency` channels
// opened on the devnet to the gateway's treasury, one worker per channel (a channel pays one call at a time),
// each answering one challenge for its calls and signing every voucher itself (node:crypto Ed25519 over
// commitmentBytes), keeping its channel's cumulative amount. Both sides run the same request loop. Prints
// calls/s of each, channel/credits (target >= 0.8) with its 90 % interval, CPU and PostgreSQL write
// transactions per call, and the devnet's transactions during the channel turns per channel call (zero
// expected: a voucher is checked and stored off chain; the watcher settles far above these amounts).
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type pg from 'pg';
import { Keypair } from '@stellar/stellar-sdk';
import type { Pool } from 'undici';
import { formatPaymentCredential, parsePaymentChallenges, type PaymentChallenge } from '@farebox/protocol';
import { commitmentBytes, createAccounts, keypairSigner, LOCAL_CHANNEL_FACTORY_ID, openChannel, rpcServer, type NetworkConfig } from '@farebox/stellar';
import { addInto, cpuDelta, cpuPerCall, medianOf, pairedSummary, spreadOf } from './stats.js';

export interface ChannelModeOptions {
  /** The gateway's URL, and a pool of `concurrency` connections to it. */
  base: string;
  pool: Pool;
  devnetUrl: string;
  network: NetworkConfig;
  /** The credit side's API keys (worker w uses key w mod their count). */
  keys: string[];
  /** The call's JSON body (the same service on both sides). */
  body: string;
  concurrency: number;
  turnMs: number;
  rounds: number;
  /** CPU seconds per kind of process so far (calls.ts's /proc reading). */
  cpuNow: () => Promise<Map<string, number>>;
  /** The bench's own PostgreSQL connection (write transactions per call), when on PostgreSQL. */
  admin?: pg.Client;
}

/** Each channel's deposit: 1 USDC, a million calls at the bench's price of 1 base unit. */
const DEPOSIT = 10_000_000n;
/** Ledgers between a close_start and its refund (the local gateway takes 10 or more). */
const REFUND_WAITING_PERIOD = 20;

interface Channel {
  id: string;
  key: KeyObject;
  /** The channel's cumulative amount as this worker counts it. */
  paid: bigint;
  price: bigint;
  challenge: PaymentChallenge;
}

/** A worker's next request: its headers, and what it does with the answer's status. */
type Next = () => Promise<{ headers: Record<string, string>; answered: (status: number) => Promise<void> | void }>;

/** The request loop of both sides: one worker per entry, each a call at a time until `ms` have passed. */
async function turn(pool: Pool, body: string, workers: Next[], ms: number) {
  let n = 0;
  let errors = 0;
  const end = Date.now() + ms;
  const started = performance.now();
  await Promise.all(
    workers.map(async (next) => {
      while (Date.now() < end) {
        const { headers, answered } = await next();
        const res = await pool.request({ method: 'POST', path: '/v1/call', headers: { 'content-type': 'application/json', ...headers }, body });
        await res.body.dump();
        await answered(res.statusCode);
        if (res.statusCode !== 200) errors++;
        n++;
      }
    }),
  );
  return { rps: n / ((performance.now() - started) / 1000), n, errors };
}

/** The devnet's transaction count (its explorer's front page: "N accounts, M transactions"). */
async function chainTransactions(devnetUrl: string): Promise<number> {
  const html = await (await fetch(`${devnetUrl}/explorer/local`)).text();
  const m = /(\d+) transactions/.exec(html);
  if (!m) throw new Error('the devnet explorer shows no transaction count');
  return Number(m[1]);
}

/** The operations of the devnet's `n` latest transactions (its explorer's front page), tags stripped. */
async function latestOperations(devnetUrl: string, n: number): Promise<string[]> {
  const html = await (await fetch(`${devnetUrl}/explorer/local`)).text();
  const rows = [...html.matchAll(/<tr><td>\d+<\/td>.*?<\/tr>/g)].slice(0, n);
  return rows.map(
    (r) =>
      /<td>((?:(?!<td>).)*)<\/td><\/tr>$/
        .exec(r[0])?.[1]
        ?.replace(/<br>/g, '; ')
        .replace(/<[^>]+>/g, '') ?? '?',
  );
}

async function friendbot(devnetUrl: string, addr: string, usdc?: string) {
  const r = await fetch(`${devnetUrl}/friendbot?addr=${addr}${usdc ? `&usdc=${usdc}` : ''}`);
  if (!r.ok) throw new Error(`friendbot ${addr}${usdc ? ` (${usdc} USDC)` : ''}: ${r.status} ${await r.text()}`);
}

/** An unpaid call naming the channel: its challenge, the price and the channel's cumulative amount as the gateway holds it. */
async function challengeOf(o: ChannelModeOptions, channel: string) {
  const r = await fetch(`${o.base}/v1/call`, { method: 'POST', headers: { 'content-type': 'application/json', 'farebox-channel': channel }, body: o.body });
  const challenge = parsePaymentChallenges(r.headers.get('www-authenticate') ?? undefined).find((c) => c.method === 'stellar' && c.intent === 'channel');
  if (r.status !== 402 || !challenge) throw new Error(`no channel challenge for ${channel}: ${r.status} ${await r.text()}`);
  const request = challenge.request as { amount: string; methodDetails: { cumulativeAmount: string } };
  return { challenge, price: BigInt(request.amount), paid: BigInt(request.methodDetails.cumulativeAmount) };
}

/** A funder with XLM, a USDC trustline and 1 USDC opens a channel to the treasury whose vouchers a fresh Ed25519 key signs. */
async function openOne(o: ChannelModeOptions, treasury: string): Promise<Channel> {
  const funder = Keypair.random();
  await friendbot(o.devnetUrl, funder.publicKey());
  await createAccounts(o.network).ensureUsdcTrustline(keypairSigner(funder.secret()));
  await friendbot(o.devnetUrl, funder.publicKey(), '1');
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const { channel } = await openChannel(rpcServer(o.network), o.network, keypairSigner(funder.secret()), {
    factory: LOCAL_CHANNEL_FACTORY_ID,
    token: o.network.usdc.contractId,
    recipient: treasury,
    commitmentKey: Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'),
    amount: DEPOSIT,
    refundWaitingPeriod: REFUND_WAITING_PERIOD,
  });
  return { id: channel, key: privateKey, ...(await challengeOf(o, channel)) };
}

/** The load generator's time making vouchers (commitment bytes, signature, credential): its share of a channel call. */
const making = { ms: 0, n: 0 };

/** A channel's worker: a voucher for its count plus the price, signed here; counted when the call answers 200. */
function channelWorker(o: ChannelModeOptions, c: Channel): Next {
  return async () => {
    // A challenge lasts 5 minutes: a fresh one shortly before.
    if (Date.parse(c.challenge.expires!) - Date.now() < 30_000) Object.assign(c, await challengeOf(o, c.id));
    const t0 = performance.now();
    const amount = c.paid + c.price;
    const signature = sign(null, commitmentBytes(c.id, amount, o.network.passphrase), c.key).toString('hex');
    const authorization = formatPaymentCredential({ challenge: c.challenge, payload: { action: 'voucher', amount: amount.toString(), signature } });
    making.ms += performance.now() - t0;
    making.n++;
    return {
      headers: { authorization },
      answered: async (status) => {
        if (status === 200) c.paid = amount;
        // Refused: the gateway's count comes with a fresh challenge (a 500 counted nothing: the same amount again).
        else if (status === 402) Object.assign(c, await challengeOf(o, c.id));
      },
    };
  };
}

export async function channelMode(o: ChannelModeOptions): Promise<void> {
  const { treasury } = (await (await fetch(`${o.base}/v1/platform/key`)).json()) as { treasury: string };
  const opened = performance.now();
  const txOpen0 = await chainTransactions(o.devnetUrl);
  const channels = await Promise.all(Array.from({ length: o.concurrency }, () => openOne(o, treasury)));
  const txOpen = (await chainTransactions(o.devnetUrl)) - txOpen0;
  console.log(
    `${channels.length} channels opened in ${((performance.now() - opened) / 1000).toFixed(1)} s (${txOpen} chain transactions: account, trustline, USDC, open each); price ${channels[0]!.price} base units a call`,
  );
  const sides = {
    credits: Array.from(
      { length: o.concurrency },
      (_, w): Next =>
        async () => ({ headers: { authorization: `Bearer ${o.keys[w % o.keys.length]}` }, answered: () => undefined }),
    ),
    channel: channels.map((c) => channelWorker(o, c)),
  };
  // Warm-up: every channel's first voucher, the gateway's code paths hot.
  await turn(o.pool, o.body, sides.channel, 1500);
  await turn(o.pool, o.body, sides.credits, 1500);

  const xidNow = async () => (o.admin ? Number((await o.admin.query('SELECT pg_snapshot_xmax(pg_current_snapshot())::text::int8 AS x')).rows[0].x) : 0);
  const turns = { credits: [] as number[], channel: [] as number[] };
  const cpu = { credits: new Map<string, number>(), channel: new Map<string, number>() };
  const calls = { credits: 0, channel: 0 };
  const errors = { credits: 0, channel: 0 };
  const xacts = { credits: 0, channel: 0 };
  let chainTxs = 0;
  const seen = new Map<string, number>();
  for (let t = 0; t < o.rounds * 4; t++) {
    const side = [0, 1, 1, 0][t % 4] === 1 ? 'channel' : 'credits';
    // The devnet's count is read outside the CPU readings (its explorer page costs the devnet CPU).
    const tx0 = side === 'channel' ? await chainTransactions(o.devnetUrl) : 0;
    const before = await o.cpuNow();
    const xid0 = await xidNow();
    const r = await turn(o.pool, o.body, sides[side], o.turnMs);
    xacts[side] += (await xidNow()) - xid0;
    addInto(cpu[side], cpuDelta(before, await o.cpuNow()));
    if (side === 'channel') {
      const more = (await chainTransactions(o.devnetUrl)) - tx0;
      chainTxs += more;
      // What went on chain during a channel turn (none expected): the latest rows, read at once.
      if (more > 0) for (const op of await latestOperations(o.devnetUrl, more)) seen.set(op, (seen.get(op) ?? 0) + 1);
    }
    turns[side].push(r.rps);
    calls[side] += r.n;
    errors[side] += r.errors;
  }
  // Each channel turn against the credit turn beside it (ABBA: turns 2k and 2k+1 hold one of each).
  const s = pairedSummary(turns.credits.map((x, i) => turns.channel[i]! / x));
  const line = (name: string, xs: number[]) => `${name} ${medianOf(xs).toFixed(0)} calls/s median of ${xs.length} turns of ${o.turnMs} ms (${spreadOf(xs)})`;
  console.log(line('credit calls ', turns.credits));
  console.log(line('channel calls', turns.channel));
  console.log(
    `  channel/credits     ${s.text}; target channel >= 0.8 of credits: ${s.ratio >= 0.8 ? 'met' : 'not met'}${s.low >= 0.8 || s.high < 0.8 ? '' : ' (the interval spans 0.8)'} (ratio of the medians ${(medianOf(turns.channel) / medianOf(turns.credits)).toFixed(3)})`,
  );
  console.log(`  CPU ms per call, credits: ${cpuPerCall(cpu.credits, calls.credits)}`);
  console.log(`  CPU ms per call, channel: ${cpuPerCall(cpu.channel, calls.channel)}`);
  if (o.admin)
    console.log(
      `  PostgreSQL write transactions per call: credits ${(xacts.credits / calls.credits).toFixed(3)}, channel ${(xacts.channel / calls.channel).toFixed(3)}`,
    );
  const what = [...seen].map(([op, k]) => `${k} x ${op.slice(0, 160)}`).join(' | ');
  console.log(
    `  chain transactions per channel call after open: ${(chainTxs / calls.channel).toFixed(4)} (${chainTxs} during ${calls.channel} channel calls${what ? `: ${what}` : ''})`,
  );
  console.log(
    `  voucher making in the load generator: ${((making.ms * 1000) / making.n).toFixed(0)} µs per channel call (commitment bytes, Ed25519 signature, credential)`,
  );
  console.log(`  errors: credits ${errors.credits} of ${calls.credits} calls, channel ${errors.channel} of ${calls.channel}`);
}
