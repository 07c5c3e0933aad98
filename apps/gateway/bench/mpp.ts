// MPP channel calls against credits, x402 `exact` and MPP `charge`, one caller: `pnpm bench mpp`.
//
// One gateway with its embedded devnet under the testnet passphrase (as bench/x402.ts: `exact` runs on
// stellar:testnet with the gateway as the facilitator), on PostgreSQL when DATABASE_URL (or the local
// default) answers, else PGlite; once with the gateway's default ledger close interval (1000 ms) and once
// with 'instant' (a ledger per transaction). One @farebox/provider service (0.1 USDC a call) is paid, one
// call at a time and in turn so all see the same moments of the machine:
//   - channel voucher: an MPP channel to the treasury, opened first; one challenge answered for every call
//     (it lasts 5 minutes), each call one POST /v1/call with a voucher signed here (node:crypto Ed25519);
//   - channel, @farebox/client: createChannelPayer on a second channel (a challenge and a voucher each call);
//   - credits: an account's API key (Authorization: Bearer);
//   - x402 exact: @farebox/client paying the service directly, the gateway verifying and settling;
//   - MPP charge (the provider's stellar/charge challenge, pull mode): a USDC transfer whose auth entry the
//     payer signs, built with the Stellar SDK as e2e/mpp-charge-client.mjs does; it takes the exact path.
// BENCH_CALLS (default 200) calls of each gateway kind, BENCH_ROUNDS (default 10) exact and charge calls in
// turn. Prints the median and p90 latency and the devnet's transactions during each call (its count before
// and after).
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { postgresUrl } from './postgres.js';
import { contract, Keypair, nativeToScVal } from '@stellar/stellar-sdk';
import { Pool } from 'undici';
import { createChannelPayer, createClient } from '@farebox/client';
import { createProvider } from '@farebox/provider';
import { formatPaymentCredential, parsePaymentChallenges } from '@farebox/protocol';
import { commitmentBytes, createAccounts, createRegistryClient, keypairSigner, LOCAL_CHANNEL_FACTORY_ID, openChannel, rpcServer } from '@farebox/stellar';
import { eventually } from '@farebox/test-kit';
import { startGateway } from '../src/index.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const EXACT_CALLS = Number(process.env.BENCH_ROUNDS ?? 10);
const PRICE = 1_000_000n; // 0.1 USDC
const SERVICE = 'bench-mpp';

interface Timing {
  ms: number[];
  txs: number[];
}
const timing = (): Timing => ({ ms: [], txs: [] });
const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
/** Chain transactions per call: the mean, and the counts seen when they differ. */
const txsPer = (t: Timing) => {
  const distinct = [...new Set(t.txs)].sort((a, b) => a - b);
  const mean = t.txs.reduce((a, b) => a + b, 0) / t.txs.length;
  return distinct.length === 1 ? String(distinct[0]) : `${mean.toFixed(3)} (${distinct.join(' or ')})`;
};

const dbUrl = await postgresUrl();

async function admin(sql: string) {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  await c.query(sql);
  await c.end();
}

async function run(closeIntervalMs: number | 'instant'): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-bench-mpp-'));
  const schema = `bench_mpp_${process.pid}_${closeIntervalMs === 'instant' ? 'instant' : closeIntervalMs}`;
  if (dbUrl) await admin(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  const gw = await startGateway({
    port: 0,
    network: 'local',
    stellar: { devnetPassphrase: 'testnet' },
    allowLoopbackEndpoints: true,
    dataDir,
    ...(dbUrl ? { databaseUrl: `${dbUrl}${dbUrl.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}` } : {}),
    devnetCloseIntervalMs: closeIntervalMs,
    devnetInMemory: true,
    logLevel: 'error',
    env: {},
    signupCredit: '1000',
    rateLimits: { accountPerMinute: 1_000_000, anonymousPerMinute: 100_000 },
    settlement: { settlementInterval: '1h', fundingInterval: '1h' },
    x402: { payerPerMinute: 100_000, ipPerMinute: 100_000, payerDailyFeeStroops: 10_000_000_000, dailyFeeStroops: 10_000_000_000 },
  });
  const devnet = gw.devnet!;
  const network = gw.core.network;
  const chain = createAccounts(network);
  const treasury = gw.core.treasuryAddress;
  const closers: Array<() => Promise<void>> = [];
  try {
    await eventually('the treasury’s USDC trustline', async () => (await chain.balances(treasury)).usdc !== null, { timeoutMs: 20_000 });
    const account = async (usdc = 0n) => {
      const kp = Keypair.random();
      await devnet.friendbot(kp.publicKey());
      await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
      if (usdc > 0n) await devnet.friendbot(kp.publicKey(), usdc);
      return kp;
    };
    const deposit = BigInt(CALLS + 5) * PRICE;
    const [owner, payer, chargePayer, funder, payerFunder] = await Promise.all([
      account(),
      account(BigInt(EXACT_CALLS + 2) * PRICE),
      account(BigInt(EXACT_CALLS + 2) * PRICE),
      account(deposit),
      account(deposit),
    ]);
    const registry = createRegistryClient(network);
    const provider = createProvider({
      service: SERVICE,
      pricePerCall: '0.1',
      description: 'mpp bench: echoes its payload',
      network: 'local',
      devnetUrl: devnet.url,
      devnetPassphrase: 'testnet',
      platform: { publicKey: gw.core.platformPublicKey, url: gw.url },
      wallet: { secret: owner.secret() },
      registry,
      exact: { servedStorePath: join(dataDir, 'served-exact.json') },
      trustlessWork: { apiKey: 'bench-provider-key', platformAddress: treasury, baseUrl: `${devnet.url}/escrow` },
      servedStorePath: join(dataDir, 'served-escrows.json'),
      env: {},
    }).serve((payload) => ({ echo: payload }));
    const listening = await provider.listen(0, '127.0.0.1');
    closers.push(() => provider.close());
    const endpoint = `${listening.url}/`;
    await registry.register(keypairSigner(owner.secret()), { service: SERVICE, pricePerCall: PRICE, endpoint, description: 'mpp bench' });
    await gw.core.mirror.syncOnce();

    // Two channels to the treasury: one paid with vouchers made here, one with @farebox/client's payer.
    const open = async (from: Keypair, commitmentKey: Uint8Array) =>
      (
        await openChannel(rpcServer(network), network, keypairSigner(from.secret()), {
          factory: LOCAL_CHANNEL_FACTORY_ID,
          token: network.usdc.contractId,
          recipient: treasury,
          commitmentKey,
          amount: deposit,
          refundWaitingPeriod: 20,
        })
      ).channel;
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const channel = await open(funder, Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'));
    const payerKey = Keypair.random();
    const payerChannel = await open(payerFunder, payerKey.rawPublicKey());
    const channelPayer = createChannelPayer({
      baseUrl: gw.url,
      channel: payerChannel,
      commitmentSecret: payerKey.secret(),
      networkPassphrase: network.passphrase,
    });

    // One connection to the gateway, kept alive, for the raw channel and credit calls.
    const pool = new Pool(gw.url, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
    closers.push(() => pool.close());
    const body = JSON.stringify({ service: SERVICE, payload: { n: 1 } });
    const post = async (headers: Record<string, string>) => {
      const res = await pool.request({ method: 'POST', path: '/v1/call', headers: { 'content-type': 'application/json', ...headers }, body });
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers, text };
    };

    // The channel's challenge, answered for every call (one POST per call from here on).
    const asked = await post({ 'farebox-channel': channel });
    const challenge = parsePaymentChallenges(String(asked.headers['www-authenticate'] ?? '')).find((c) => c.intent === 'channel');
    if (asked.status !== 402 || !challenge) throw new Error(`no channel challenge: ${asked.status} ${asked.text}`);
    let paid = 0n;
    const voucherCall = async () => {
      const amount = paid + PRICE;
      const signature = sign(null, commitmentBytes(channel, amount, network.passphrase), privateKey).toString('hex');
      const r = await post({ authorization: formatPaymentCredential({ challenge, payload: { action: 'voucher', amount: amount.toString(), signature } }) });
      if (r.status !== 200) throw new Error(`channel call: ${r.status} ${r.text}`);
      paid = amount;
    };
    const payerCall = async () => void (await channelPayer.call(SERVICE, { n: 1 }));

    // An account with credit (signupCredit) and its API key.
    const s = await fetch(`${gw.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `bench-mpp-${process.pid}@example.com`, password: 'bench password' }),
    });
    const cookie = s.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const { csrf_token } = (await s.json()) as { csrf_token: string };
    const k = await fetch(`${gw.url}/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
      body: JSON.stringify({ name: 'bench' }),
    });
    const apiKey = ((await k.json()) as { key: string }).key;
    const creditCall = async () => {
      const r = await post({ authorization: `Bearer ${apiKey}` });
      if (r.status !== 200) throw new Error(`credit call: ${r.status} ${r.text}`);
    };
    const exactClient = createClient({ network, secret: payer.secret(), exact: true, platformAddress: treasury, env: {} });
    const exactCall = async () => {
      const out = await exactClient.call({ service: SERVICE, endpoint }, { n: 1 });
      if (out.scheme !== 'exact') throw new Error(`asked to pay with exact, the client paid with ${out.scheme}`);
    };

    // MPP charge at the provider, pull mode: the 402's stellar/charge challenge, a transfer to its recipient whose auth
    // entry the payer signs (the facilitator pays the fee and submits), the credential in Authorization: Payment.
    const chargeCall = async () => {
      const post = (headers: Record<string, string> = {}) =>
        fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"n":1}' });
      const unpaid = await post();
      await unpaid.text();
      const ch = parsePaymentChallenges(unpaid.headers.get('www-authenticate') ?? undefined).find((c) => c.method === 'stellar' && c.intent === 'charge');
      if (!ch) throw new Error(`no stellar charge challenge in the ${unpaid.status} answer`);
      const { amount, currency, recipient, methodDetails } = ch.request as {
        amount: string;
        currency: string;
        recipient: string;
        methodDetails: { network: string };
      };
      const tx = await contract.AssembledTransaction.build({
        contractId: currency,
        method: 'transfer',
        args: [
          nativeToScVal(chargePayer.publicKey(), { type: 'address' }),
          nativeToScVal(recipient, { type: 'address' }),
          nativeToScVal(BigInt(amount), { type: 'i128' }),
        ],
        networkPassphrase: network.passphrase,
        rpcUrl: network.rpcUrl,
        allowHttp: true,
        parseResultXdr: (r) => r,
      });
      const latest = (await rpcServer(network).getLatestLedger()).sequence;
      await tx.signAuthEntries({
        address: chargePayer.publicKey(),
        signAuthEntry: contract.basicNodeSigner(chargePayer, network.passphrase).signAuthEntry,
        // No later than the challenge's expiry (ledgers of 5 s), as the facilitator checks.
        expiration: latest + Math.ceil(Math.max(1, (Date.parse(ch.expires!) - Date.now()) / 1000) / 5),
      });
      const authorization = formatPaymentCredential({
        challenge: ch,
        payload: { type: 'transaction', transaction: tx.built!.toXDR() },
        source: `did:pkh:${methodDetails.network}:${chargePayer.publicKey()}`,
      });
      const paid = await post({ authorization });
      const text = await paid.text();
      if (paid.status !== 200) throw new Error(`MPP charge call: ${paid.status} ${text}`);
    };

    async function timed(call: () => Promise<void>, into?: Timing) {
      const tx0 = devnet.stats().transactions;
      const t0 = performance.now();
      await call();
      into?.ms.push(performance.now() - t0);
      into?.txs.push(devnet.stats().transactions - tx0);
    }
    const kinds = [
      { name: 'MPP channel, voucher (challenge reused)', call: voucherCall, t: timing() },
      { name: 'MPP channel, @farebox/client payer', call: payerCall, t: timing() },
      { name: 'credits (API key)', call: creditCall, t: timing() },
    ];
    // Warm-up: every path once.
    for (const kind of kinds) for (let i = 0; i < 3; i++) await timed(kind.call);
    await timed(exactCall);
    await timed(chargeCall);
    const txs0 = devnet.stats().transactions;
    for (let i = 0; i < CALLS; i++) {
      // In turn, the order rotating, so drift falls on every kind alike.
      for (let j = 0; j < kinds.length; j++) {
        const kind = kinds[(i + j) % kinds.length]!;
        await timed(kind.call, kind.t);
      }
    }
    const gatewayTxs = devnet.stats().transactions - txs0;
    const exact = timing();
    const charge = timing();
    for (let i = 0; i < EXACT_CALLS; i++) {
      for (const [call, into] of i % 2 === 0
        ? ([
            [exactCall, exact],
            [chargeCall, charge],
          ] as const)
        : ([
            [chargeCall, charge],
            [exactCall, exact],
          ] as const))
        await timed(call, into);
    }

    const label =
      closeIntervalMs === 'instant' ? "close interval 'instant' (a ledger per transaction)" : `close interval ${closeIntervalMs} ms (the gateway's default)`;
    console.log(`\n${label}; ${CALLS} calls of each gateway kind in turn, then ${EXACT_CALLS} exact and charge calls in turn; one caller:`);
    const rows = [
      ...kinds.map((k) => ({ name: k.name, t: k.t })),
      { name: 'x402 exact (@farebox/client, direct)', t: exact },
      { name: 'MPP charge (@farebox/provider, direct)', t: charge },
    ];
    console.log(`  ${'kind'.padEnd(42)} ${'median'.padStart(10)} ${'p90'.padStart(10)}  chain transactions per call`);
    for (const r of rows)
      console.log(`  ${r.name.padEnd(42)} ${`${ms(pct(r.t.ms, 50))} ms`.padStart(10)} ${`${ms(pct(r.t.ms, 90))} ms`.padStart(10)}  ${txsPer(r.t)}`);
    console.log(
      `  the devnet took ${gatewayTxs} transactions during the ${kinds.length * CALLS} gateway calls (the channels' opens before); off the calls' path the watcher settles a channel once FAREBOX_MPP_SETTLE_MIN (1 USDC: 10 calls at this price) is paid and not withdrawn, at most once a 30 s pass, and closes it once`,
    );
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    await gw.close();
    if (dbUrl) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
}

console.log(
  `MPP channel vs credits vs x402 exact vs MPP charge on one gateway + embedded devnet under the testnet passphrase, ${dbUrl ? 'PostgreSQL' : 'PGlite (PostgreSQL not reachable)'} (BENCH_CALLS ${CALLS}, BENCH_ROUNDS ${EXACT_CALLS})`,
);
for (const interval of [1000, 'instant'] as const) await run(interval);
