// x402 `exact` against `escrow`: `pnpm bench x402`.
//
// One gateway with its embedded devnet under the testnet passphrase (so
// `exact` runs on stellar:testnet and the gateway is the platform's
// facilitator), once with the gateway's default ledger close interval (1000 ms:
// a pending transaction waits for the next close, as on a real network) and
// once with 'instant' (a ledger per transaction: the software's own cost). A
// @farebox/provider service offers both `exact` (through <gateway>/x402) and
// `escrow`; @farebox/client pays it BENCH_ROUNDS times (default 5) each way,
// alternating, and the facilitator's POST /x402/verify and /x402/settle are
// timed on their own with payloads made by the stock @x402/stellar client.
// Prints medians, p90s, the ratio escrow/exact, and the chain transactions each
// path needs (the devnet's count before and after each call); exits 1 when an
// exact call needs other than one transaction or a balance is off.
import { spawnSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { trustTestTls } from '@farebox/test-kit';

// The stock client (facilitator payloads) reaches the devnet's RPC over https only: this process must trust the test certificate.
const trust = trustTestTls(process.env.NODE_EXTRA_CA_CERTS);
if (trust !== process.env.NODE_EXTRA_CA_CERTS) {
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync(process.execPath, [...process.execArgv, self, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, NODE_EXTRA_CA_CERTS: trust },
  });
  process.exit(r.status ?? 1);
}

const { Keypair } = await import('@stellar/stellar-sdk');
const { x402Client } = await import('@x402/core/client');
const { createEd25519Signer } = await import('@x402/stellar');
const { ExactStellarScheme } = await import('@x402/stellar/exact/client');
const { createClient } = await import('@farebox/client');
const { createProvider } = await import('@farebox/provider');
const { createAccounts, createRegistryClient, keypairSigner, servicePayTo } = await import('@farebox/stellar');
const { eventually, httpsProxy } = await import('@farebox/test-kit');
const { startGateway } = await import('../src/index.js');

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PRICE = 1_000_000n; // 0.1 USDC
const SERVICE = 'bench-x402';

interface Timing {
  ms: number[];
  txs: number[];
}
const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
const line = (t: Timing) => `median ${ms(pct(t.ms, 50))} ms, p90 ${ms(pct(t.ms, 90))} ms`;
const txsPer = (t: Timing) => {
  const distinct = [...new Set(t.txs)].sort((a, b) => a - b);
  return distinct.length === 1 ? String(distinct[0]) : distinct.join(' or ');
};

async function run(closeIntervalMs: number | 'instant'): Promise<boolean> {
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-bench-x402-'));
  const gw = await startGateway({
    port: 0,
    network: 'local',
    stellar: { devnetPassphrase: 'testnet' },
    allowLoopbackEndpoints: true,
    dataDir,
    devnetCloseIntervalMs: closeIntervalMs,
    devnetInMemory: true,
    logLevel: 'error',
    env: {},
    settlement: { settlementInterval: '1h', fundingInterval: '1h' },
    // Latency, not the facilitator's bounds: room for every call of the run.
    x402: { payerPerMinute: 100_000, ipPerMinute: 100_000, payerDailyFeeStroops: 10_000_000_000, dailyFeeStroops: 10_000_000_000 },
  });
  const proxy = await httpsProxy(gw.url);
  const devnet = gw.devnet!;
  const network = gw.core.network;
  const chain = createAccounts(network);
  const treasury = gw.core.treasuryAddress;
  const closers: Array<() => Promise<void>> = [];
  try {
    // The gateway sets up the treasury's USDC trustline itself as it starts (another treasury transaction meanwhile would race it: tx_bad_seq).
    await eventually('the treasury’s USDC trustline', async () => (await chain.balances(treasury)).usdc !== null, { timeoutMs: 20_000 });
    const account = async (usdc = 0n) => {
      const kp = Keypair.random();
      await devnet.friendbot(kp.publicKey());
      await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
      if (usdc > 0n) await devnet.friendbot(kp.publicKey(), usdc);
      return kp;
    };
    const [owner, payer, signer] = await Promise.all([account(), account(BigInt(ROUNDS + 1) * 2n * PRICE), account(BigInt(ROUNDS) * PRICE)]);
    const registry = createRegistryClient(network);
    const provider = createProvider({
      service: SERVICE,
      pricePerCall: '0.1',
      description: 'x402 bench: echoes its payload',
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
    await registry.register(keypairSigner(owner.secret()), { service: SERVICE, pricePerCall: PRICE, endpoint, description: 'x402 bench' });
    await gw.core.mirror.syncOnce();

    // A fresh escrow API key per escrow call: the devnet's escrow API allows 50 requests a minute per key.
    let keys = 0;
    const client = (exact: boolean) =>
      createClient({
        network,
        secret: payer.secret(),
        exact,
        escrow: { apiKey: `bench-client-${keys++}`, budget: { requests: 100_000, windowMs: 1000 } },
        platformAddress: treasury,
        env: {},
      });
    const exact: Timing = { ms: [], txs: [] };
    const escrow: Timing = { ms: [], txs: [] };
    async function call(how: 'exact' | 'escrow', into?: Timing) {
      const tx0 = devnet.stats().transactions;
      const t0 = performance.now();
      const out = await client(how === 'exact').call({ service: SERVICE, endpoint }, { n: 1 });
      const elapsed = performance.now() - t0;
      if (out.scheme !== how) throw new Error(`asked to pay with ${how}, the client paid with ${out.scheme}`);
      // Only the payer's transactions (and the service's release) go on chain meanwhile: settlement batches are an hour apart.
      await new Promise((r) => setTimeout(r, 20));
      into?.ms.push(elapsed);
      into?.txs.push(devnet.stats().transactions - tx0);
    }
    const before = (await chain.balances(payer.publicKey())).usdc ?? 0n;
    await call('exact');
    await call('escrow');
    for (let i = 0; i < ROUNDS; i++) {
      // Alternate the order so drift falls on both sides alike.
      if (i % 2 === 0) {
        await call('exact', exact);
        await call('escrow', escrow);
      } else {
        await call('escrow', escrow);
        await call('exact', exact);
      }
    }
    const spent = before - ((await chain.balances(payer.publicKey())).usdc ?? 0n);

    // The facilitator alone: verify and settle payloads the stock client signed (payTo the treasury muxed with the service's id, extra.service named).
    const stock = new x402Client().register(
      'stellar:*',
      new ExactStellarScheme(createEd25519Signer(signer.secret(), 'stellar:testnet'), { url: `${proxy.url}/devnet/soroban/rpc` }),
    );
    const requirements = {
      scheme: 'exact',
      network: 'stellar:testnet' as const,
      asset: network.usdc.contractId,
      amount: PRICE.toString(),
      payTo: servicePayTo(treasury, SERVICE),
      maxTimeoutSeconds: 60,
      extra: { areFeesSponsored: true, service: SERVICE },
    };
    const verify: Timing = { ms: [], txs: [] };
    const settle: Timing = { ms: [], txs: [] };
    const sign: number[] = [];
    async function facilitator(path: 'verify' | 'settle', body: string, into: Timing) {
      const tx0 = devnet.stats().transactions;
      const t0 = performance.now();
      const res = await fetch(`${gw.url}/x402/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const answer = (await res.json()) as { isValid?: boolean; success?: boolean; invalidReason?: string; errorReason?: string };
      into.ms.push(performance.now() - t0);
      into.txs.push(devnet.stats().transactions - tx0);
      if (res.status !== 200 || (path === 'verify' ? !answer.isValid : !answer.success)) {
        throw new Error(`POST /x402/${path} answered ${res.status} ${JSON.stringify(answer)}`);
      }
    }
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now();
      const paymentPayload = await stock.createPaymentPayload({
        x402Version: 2,
        resource: { url: endpoint, description: 'x402 bench', mimeType: 'application/json' },
        accepts: [requirements],
      });
      sign.push(performance.now() - t0);
      const body = JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: requirements });
      await facilitator('verify', body, verify);
      await facilitator('settle', body, settle);
    }
    const earnings = await gw.core.ledger.publisherTotals(owner.publicKey());

    const label =
      closeIntervalMs === 'instant' ? "close interval 'instant' (a ledger per transaction)" : `close interval ${closeIntervalMs} ms (the gateway's default)`;
    console.log(`\n${label}, ${ROUNDS} paid calls each way, alternating:`);
    console.log(`  exact  paid call (@farebox/client; one signed USDC transfer): ${line(exact)}; chain transactions per call: ${txsPer(exact)}`);
    console.log(
      `  escrow paid call (@farebox/client; deploy, fund, then the service's milestone, approve, release): ${line(escrow)}; chain transactions per call: ${txsPer(escrow)}`,
    );
    console.log(`  escrow/exact (medians): ${(pct(escrow.ms, 50) / pct(exact.ms, 50)).toFixed(1)}x`);
    console.log(`  facilitator POST /x402/verify: ${line(verify)}; chain transactions: ${txsPer(verify)}`);
    console.log(`  facilitator POST /x402/settle: ${line(settle)}; chain transactions: ${txsPer(settle)}`);
    console.log(`  stock @x402/stellar client signing a payload (2 simulations, over https): median ${ms(pct(sign, 50))} ms`);
    const paidExpected = BigInt(2 * (ROUNDS + 1)) * PRICE;
    // Escrow calls pay the owner through the escrow; every exact payment (calls and the facilitator's settles) is an earning.
    const exactPayments = 2 * ROUNDS + 1;
    const ok = exact.txs.every((n) => n === 1) && settle.txs.every((n) => n === 1) && spent === paidExpected && earnings.calls === exactPayments;
    console.log(
      `  payer paid ${spent} base units for ${2 * (ROUNDS + 1)} calls (expected ${paidExpected}); exact earnings recorded: ${earnings.calls} (expected ${exactPayments})${ok ? '' : '  MISMATCH'}`,
    );
    return ok;
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    await proxy.close();
    await gw.close();
  }
}

console.log(`x402 exact vs escrow on one gateway + embedded devnet under the testnet passphrase (${ROUNDS} rounds; BENCH_ROUNDS)`);
let ok = true;
for (const interval of [1000, 'instant'] as const) ok = (await run(interval)) && ok;
if (!ok) process.exitCode = 1;
