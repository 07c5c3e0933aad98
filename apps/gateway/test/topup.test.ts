import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccounts, resolveNetwork } from '@farebox/stellar';
import { startHarness, type Harness } from './harness.js';
import { startDevnetForSettlement, startStack, type Stack } from './settlement-kit.js';
import { testnetOnDevnet } from './testnet-kit.js';
import { eventually, testClock } from '@farebox/test-kit';

const USDC = 10_000_000n;
const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
/** The real `farebox` command (from source). */
const CLI = join(here, '..', '..', 'cli', 'src', 'cli.ts');

describe('free top-ups (the local network)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('pglite');
  }, 60_000);
  afterAll(() => h?.close());

  it('are unpaid credits marked as such, and an Idempotency-Key makes one happen once', async () => {
    const u = await h.user();
    expect((await h.gw.core.platform.key()).topups).toBe('free');
    const first = await u.api('/v1/topup', { body: { amount: 7 }, headers: { 'idempotency-key': 'free-once' } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      balance_base_units: 120_000_000,
      topup: { status: 'completed', amount_base_units: 70_000_000, paid_with: null, note: 'free' },
    });
    const replay = await u.api('/v1/topup', { body: { amount: 7 }, headers: { 'idempotency-key': 'free-once' } });
    expect(replay).toMatchObject({ status: 200, body: first.body });
    const other = await u.api('/v1/topup', { body: { amount: 8 }, headers: { 'idempotency-key': 'free-once' } });
    expect(other).toMatchObject({ status: 409, body: { error: 'idempotency key reused with a different request' } });
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(120_000_000);
    const topups = ((await u.api('/v1/transactions')).body as any[]).filter((t) => t.type === 'topup' && t.note !== 'signup');
    expect(topups).toHaveLength(1);
    expect(topups[0].note).toMatch(/^free:/);
  });

  it('two concurrent top-ups with one key credit once', async () => {
    const u = await h.user();
    const both = await Promise.all([1, 2].map(() => u.api('/v1/topup', { body: { amount: 3 }, headers: { 'idempotency-key': 'race' } })));
    expect(both.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    for (const r of both)
      if (r.status !== 200) expect(r).toMatchObject({ status: 409, body: { error: 'a request with this idempotency key is still in progress' } });
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(80_000_000);
  });
});

describe('a testnet-configured gateway (on the devnet)', () => {
  let s: Stack;
  const chain = () => createAccounts(resolveNetwork({ network: 'local', devnetUrl: s.devnet.url, env: {} }));
  beforeAll(async () => {
    const devnet = await startDevnetForSettlement();
    s = await startStack({ devnet, env: testnetOnDevnet(devnet) });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
    await s?.devnet.close();
  });

  async function walletReady(address: string) {
    await eventually(`wallet ${address} is set up`, async () => {
      const b = await chain().balances(address);
      return b.exists && b.usdc !== null;
    });
  }

  it('sets a new wallet up on chain from sign-up, with no request asking for it, and says so until it is ready', async () => {
    const u = await s.user();
    const me = await u.api('/v1/me');
    expect(me.body.custodial_wallet).toBe(u.wallet);
    expect(['provisioning', 'ok']).toContain(me.body.wallet_status);
    // Only /v1/me and the chain are looked at: nothing else asks for the wallet.
    await walletReady(u.wallet);
    expect((await chain().balances(u.wallet)).usdc).toBe(0n);
    expect((await u.api('/v1/me')).body.wallet_status).toBe('ok');
    expect((await s.gw.core.db.query('SELECT wallet_ready_at FROM gw_users WHERE id = $1', [u.id])).rows[0]!.wallet_ready_at).not.toBeNull();
  });

  it('moves the top-up in USDC from the wallet to the treasury and credits exactly that, once per Idempotency-Key', async () => {
    expect(s.gw.core.platform.key()).toMatchObject({ network: 'testnet', topups: 'wallet' });
    const u = await s.user();
    await walletReady(u.wallet);
    const treasury = s.gw.core.treasuryAddress;
    const usdc = async (a: string) => (await chain().balances(a)).usdc ?? 0n;

    // Nothing in the wallet: 402 with what is there and how to fund it; nothing moves.
    const credits0 = (await u.api('/v1/balance')).body.balance_base_units as number;
    const treasury0 = await usdc(treasury);
    const poor = await u.api('/v1/topup', { body: { amount: 5 } });
    expect(poor.status).toBe(402);
    expect(poor.body.error).toContain('insufficient USDC in your wallet: 0 USDC there, 5 needed');
    expect(poor.body.error).toContain(u.wallet);
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(credits0);
    expect(await usdc(treasury)).toBe(treasury0);

    await s.devnet.friendbot(u.wallet, 10n * USDC);
    const wallet1 = await usdc(u.wallet);
    expect(wallet1).toBe(10n * USDC);
    const paid = await u.api('/v1/topup', { body: { amount: 3.5 }, headers: { 'idempotency-key': 'paid-1' } });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body.topup).toMatchObject({ status: 'completed', paid_with: 'wallet', amount_base_units: 35_000_000 });
    expect(paid.body.topup.tx_signature).toMatch(/^[0-9a-f]{64}$/);
    expect(paid.body.topup.explorer_url).toBe(`${s.devnet.url}/explorer/local/tx/${paid.body.topup.tx_signature}`);
    expect(paid.body.balance_base_units).toBe(credits0 + 35_000_000);
    // Exact to the base unit on chain.
    expect(await usdc(u.wallet)).toBe(wallet1 - 35_000_000n);
    expect(await usdc(treasury)).toBe(treasury0 + 35_000_000n);

    // Replay: the same answer, nothing moves again; another amount under the key: 409.
    const replay = await u.api('/v1/topup', { body: { amount: 3.5 }, headers: { 'idempotency-key': 'paid-1' } });
    expect(replay).toMatchObject({ status: 200, body: paid.body });
    expect((await u.api('/v1/topup', { body: { amount: 4 }, headers: { 'idempotency-key': 'paid-1' } })).status).toBe(409);
    expect(await usdc(u.wallet)).toBe(wallet1 - 35_000_000n);
    expect(await usdc(treasury)).toBe(treasury0 + 35_000_000n);
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(credits0 + 35_000_000);

    // More than the wallet holds: refused, nothing moves.
    const over = await u.api('/v1/topup', { body: { amount: 7 } });
    expect(over.status).toBe(402);
    expect(over.body.error).toContain('6.5 USDC there, 7 needed');
    expect(await usdc(u.wallet)).toBe(wallet1 - 35_000_000n);

    // The transaction list shows the on-chain payment.
    const txs = (await u.api('/v1/transactions')).body as any[];
    const topup = txs.find((t) => t.type === 'topup' && t.tx_signature === paid.body.topup.tx_signature);
    expect(topup).toMatchObject({ status: 'completed', paid_with: 'wallet', amount_base_units: 35_000_000, explorer_url: paid.body.topup.explorer_url });
    expect(txs.filter((t) => t.type === 'topup' && t.note !== 'signup')).toHaveLength(1);
    expect((await s.gw.core.ledger.verify()).ok).toBe(true);
  });

  it('farebox topup pays from the wallet with progress and the explorer link, and a retried key pays once', async () => {
    const u = await s.user();
    await walletReady(u.wallet);
    await s.devnet.friendbot(u.wallet, 5n * USDC);
    const usdc = async (a: string) => (await chain().balances(a)).usdc ?? 0n;
    const cli = async (args: string[]) => {
      try {
        const r = await run('pnpm', ['exec', 'tsx', '--conditions', '@farebox/source', CLI, '--url', s.url, ...args], {
          cwd: join(here, '..'),
          env: { ...process.env, FAREBOX_CONFIG_DIR: await mkdtemp(join(tmpdir(), 'farebox-cli-')), FAREBOX_API_KEY: u.key },
          timeout: 60_000,
        });
        return { code: 0, stdout: r.stdout, stderr: r.stderr };
      } catch (e) {
        const x = e as { code?: number; stdout?: string; stderr?: string };
        return { code: typeof x.code === 'number' ? x.code : 1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
      }
    };
    const first = await cli(['topup', '2', '--idempotency-key', 'cli-k1']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('Paying 2 USDC from your wallet to the platform; waiting for the settlement network to confirm...');
    expect(first.stdout).toMatch(/^Paid 2 USDC from your wallet\. Credits now \$7\.00\./);
    expect(first.stdout).toMatch(new RegExp(`explorer  ${s.devnet.url}/explorer/local/tx/[0-9a-f]{64}`));
    expect(await usdc(u.wallet)).toBe(3n * USDC);
    const again = await cli(['topup', '2', '--idempotency-key', 'cli-k1']);
    expect(again.code).toBe(0);
    expect(await usdc(u.wallet)).toBe(3n * USDC);
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(70_000_000);
    const poor = await cli(['topup', '9']);
    expect(poor.code).not.toBe(0);
    expect(poor.stderr).toMatch(/insufficient USDC in your wallet: 3 USDC there, 9 needed.*\(HTTP 402, request id [0-9a-f-]{36}\)/s);
  }, 120_000);

  it('a retry of a top-up that was paid but not yet confirmed finishes it, instead of refusing it for the USDC already sent', async () => {
    const { Asset, BASE_FEE, Horizon, Operation, TransactionBuilder } = await import('@stellar/stellar-sdk');
    const u = await s.user();
    await walletReady(u.wallet);
    await s.devnet.friendbot(u.wallet, 4n * USDC);
    const net = s.gw.core.network;
    // What an attempt cut off after submitting leaves: the record, the signed payment and its hash, the USDC gone.
    const record = await s.gw.core.ledger.recordWalletPayment(u.id, { kind: 'topup', callId: 'topup:key:cut-off', amount: 4n * USDC });
    const horizon = new Horizon.Server(net.horizonUrl, { allowHttp: true });
    const tx = new TransactionBuilder(await horizon.loadAccount(u.wallet), { fee: BASE_FEE, networkPassphrase: net.passphrase })
      .addOperation(Operation.payment({ destination: s.gw.core.treasuryAddress, asset: new Asset('USDC', net.usdc.issuer), amount: '4' }))
      .setTimeout(120)
      .build();
    const signed = await s.gw.core.wallets.sign(u.wallet, tx.toXDR(), net.passphrase);
    const hash = TransactionBuilder.fromXDR(signed, net.passphrase).hash().toString('hex');
    await s.gw.core.ledger.noteWalletPayment(record.id, { data: { hash, xdr: signed } });
    await horizon.submitTransaction(TransactionBuilder.fromXDR(signed, net.passphrase));
    expect((await chain().balances(u.wallet)).usdc).toBe(0n);
    const before = (await u.api('/v1/balance')).body.balance_base_units as number;
    const retry = await u.api('/v1/topup', { body: { amount: 4 }, headers: { 'idempotency-key': 'cut-off' } });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.topup).toMatchObject({ status: 'completed', tx_signature: hash });
    expect(retry.body.balance_base_units).toBe(before + 40_000_000);
  });

  it('a keyed top-up the wallet could not pay answers the same 402 when retried with its key, and nothing moves', async () => {
    const u = await s.user();
    await walletReady(u.wallet);
    await s.devnet.friendbot(u.wallet, 3n * USDC);
    const first = await u.api('/v1/topup', { body: { amount: 7 }, headers: { 'idempotency-key': 'short-7' } });
    expect(first.status, JSON.stringify(first.body)).toBe(402);
    expect(first.body.error).toMatch(/^insufficient USDC in your wallet: 3 USDC there, 7 needed/);
    const again = await u.api('/v1/topup', { body: { amount: 7 }, headers: { 'idempotency-key': 'short-7' } });
    expect(again.status, JSON.stringify(again.body)).toBe(402);
    expect(again.body.error).toMatch(/^insufficient USDC in your wallet: 3 USDC there, 7 needed/);
    expect((await chain().balances(u.wallet)).usdc).toBe(3n * USDC);
  });

  it('racing paid top-ups credit each on-chain payment once, exact to the base unit (8 at once on 25 USDC, 6 at once on exactly 10)', async () => {
    const usdc = async (a: string) => (await chain().balances(a)).usdc ?? 0n;
    const credits = async (u: { api: (p: string) => Promise<{ body: any }> }) => BigInt((await u.api('/v1/balance')).body.balance_base_units);
    for (const [held, racers, fits] of [
      [25n, 8, 2],
      [10n, 6, 1],
    ] as const) {
      const u = await s.user();
      await walletReady(u.wallet);
      await s.devnet.friendbot(u.wallet, held * USDC);
      const [credits0, wallet0, treasury0] = [await credits(u), await usdc(u.wallet), await usdc(s.gw.core.treasuryAddress)];
      // Half with an Idempotency-Key of their own, half with none.
      const answers = await Promise.all(
        Array.from({ length: racers }, (_, i) =>
          u.api('/v1/topup', { body: { amount: 10 }, headers: i % 2 ? { 'idempotency-key': `race-${held}-${i}` } : {} }),
        ),
      );
      const paid = answers.filter((r) => r.status === 200);
      const left = wallet0 - (await usdc(u.wallet));
      // What left the wallet reached the treasury, and became exactly that many credits.
      expect(await usdc(s.gw.core.treasuryAddress)).toBe(treasury0 + left);
      expect((await credits(u)) - credits0).toBe(left);
      expect(left).toBe(BigInt(fits) * 10n * USDC);
      expect(paid).toHaveLength(fits);
      expect(new Set(paid.map((r) => r.body.topup.tx_signature)).size).toBe(fits);
      for (const r of answers.filter((x) => x.status !== 200)) {
        expect(r.status, JSON.stringify(r.body)).toBe(402);
        expect(r.body.error).toMatch(/^insufficient USDC in your wallet: \d+(\.\d+)? USDC there, 10 needed/);
      }
      expect((await s.gw.core.ledger.verify()).mismatches).toEqual([]);
    }
  }, 120_000);

  it('the reconciliation checks every wallet-backed credit against the chain and names the ones planted in the database', async () => {
    const { Asset, BASE_FEE, Horizon, Operation, TransactionBuilder } = await import('@stellar/stellar-sdk');
    const { grantOperator } = await import('@farebox/gateway-core');
    const core = s.gw.core;
    const op = await s.user();
    await grantOperator(core.db, op.id, 'cli:test');
    const u = await s.user();
    await walletReady(u.wallet);
    await s.devnet.friendbot(u.wallet, 10n * USDC);
    const paid = await u.api('/v1/topup', { body: { amount: 2 } });
    expect(paid.status).toBe(200);
    // The sign-up credits are owed too: a treasury that holds only what wallets paid in does not cover them.
    const short = await op.api('/v1/operator/reconciliation');
    expect(short.status).toBe(200);
    expect(short.body).toMatchObject({ ok: false, treasury: { covered: false, status: 'ok' }, wallet_credits: { problems: [] }, ledger: { ok: true } });
    expect(BigInt(short.body.treasury.owed.base_units)).toBeGreaterThan(BigInt(short.body.treasury.balance.base_units));
    await s.devnet.friendbot(core.treasuryAddress, BigInt(short.body.treasury.owed.base_units));
    const clean = await op.api('/v1/operator/reconciliation');
    expect(clean.body).toMatchObject({
      ok: true,
      treasury: { covered: true },
      wallet_credits: { complete: true, problems: [] },
      ledger: { ok: true, mismatches: [] },
    });
    expect(clean.body.wallet_credits.checked).toBeGreaterThanOrEqual(1);
    const problems = async () => Number((await core.metrics.registry.getSingleMetric('farebox_wallet_credit_problems')!.get()).values[0]?.value ?? 0);
    await core.auditWalletCredits();
    expect(await problems()).toBe(0);

    // 1. A second credit of a transaction that already backs one (what the race before schema 10 wrote).
    const other = await s.user();
    const hash = paid.body.topup.tx_signature as string;
    await core.ledger.topup(other.id, 20_000_000n, { reference: `wallet:${hash}` });
    // 2. A claim on a transaction the chain never saw.
    const ghost = await core.ledger.recordWalletPayment(other.id, { kind: 'topup', callId: 'planted-ghost', amount: 30_000_000n });
    await core.ledger.resolveWalletPayment(ghost.id, { state: 'completed', txHash: 'ab'.repeat(32) });
    // 3. A claim on a real payment of 1 USDC from the wallet to the treasury, credited as 4.
    const net = core.network;
    const horizon = new Horizon.Server(net.horizonUrl, { allowHttp: true });
    const tx = new TransactionBuilder(await horizon.loadAccount(u.wallet), { fee: BASE_FEE, networkPassphrase: net.passphrase })
      .addOperation(Operation.payment({ destination: core.treasuryAddress, asset: new Asset('USDC', net.usdc.issuer), amount: '1' }))
      .setTimeout(120)
      .build();
    const signed = TransactionBuilder.fromXDR(await core.wallets.sign(u.wallet, tx.toXDR(), net.passphrase), net.passphrase);
    await horizon.submitTransaction(signed);
    const inflated = await core.ledger.recordWalletPayment(u.id, { kind: 'topup', callId: 'planted-inflated', amount: 40_000_000n });
    await core.ledger.resolveWalletPayment(inflated.id, { state: 'completed', txHash: signed.hash().toString('hex') });

    const report = await op.api('/v1/operator/reconciliation');
    expect(report.body.ok).toBe(false);
    expect(report.body.wallet_credits.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ tx_hash: 'ab'.repeat(32), account_id: other.id, payment_id: ghost.id, problem: 'transaction not found on chain' }),
        expect.objectContaining({
          tx_hash: signed.hash().toString('hex'),
          account_id: u.id,
          payment_id: inflated.id,
          problem: 'moved 10000000 base units, credited 40000000',
        }),
      ]),
    );
    expect(report.body.wallet_credits.problems).toHaveLength(2);
    expect(report.body.ledger.mismatches).toEqual([
      expect.objectContaining({ kind: 'wallet-credit', id: hash, actual: expect.stringMatching(/^2 credits in the journal/) }),
    ]);
    await core.auditWalletCredits();
    expect(await problems()).toBe(3);
  });

  it('gives the configured sign-up credit', async () => {
    const u = await s.user();
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(50_000_000);
  });
});

describe('a network without a friendbot (as on mainnet)', () => {
  it('creates each new wallet from the treasury (2 XLM: reserves and fees) and sets its trustline, once the treasury is funded', async () => {
    const devnet = await startDevnetForSettlement();
    // The gateway's clock: the test moves it past the job's retry backoff instead of waiting it out.
    const clock = testClock();
    const s = await startStack({ devnet, env: testnetOnDevnet(devnet, { STELLAR_FRIENDBOT_URL: 'none' }), gateway: { now: clock.now } });
    try {
      const chain = createAccounts(resolveNetwork({ network: 'local', devnetUrl: devnet.url, env: {} }));
      expect(s.gw.core.network.friendbotUrl).toBeUndefined();
      const u = await s.user();
      expect((await u.api('/v1/me')).body.wallet_status).toBe('provisioning');
      // The treasury has nothing yet: the job tries, fails, and retries until the operator funds it.
      const attempted = await eventually('the set-up job has tried and failed', async () => {
        const { rows } = await s.gw.core.db.query<{ wallet_attempts: number; wallet_error: string | null }>(
          'SELECT wallet_attempts, wallet_error FROM gw_users WHERE id = $1',
          [u.id],
        );
        return rows[0]!.wallet_attempts > 0 && rows[0]!.wallet_error !== null ? rows[0] : undefined;
      });
      expect(attempted.wallet_error).not.toBe('');
      expect((await chain.balances(u.wallet)).exists).toBe(false);
      await devnet.friendbot(s.gw.core.treasuryAddress);
      const treasuryXlm = (await chain.balances(s.gw.core.treasuryAddress)).xlm;
      // Past the longest backoff (5 minutes): the retry is due; GET /v1/wallet wakes the job.
      clock.advance(300_000);
      const b = await eventually(
        'the wallet is set up once the treasury is funded',
        async () => {
          await u.api('/v1/wallet');
          const now = await chain.balances(u.wallet);
          return now.exists && now.usdc !== null ? now : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      expect(b.usdc).toBe(0n);
      // 2 XLM from the treasury, less the trustline transaction's fee.
      expect(b.xlm).toBe(20_000_000n - 100n);
      expect((await chain.balances(s.gw.core.treasuryAddress)).xlm).toBe(treasuryXlm - 20_000_000n - 100n);
      expect((await u.api('/v1/me')).body.wallet_status).toBe('ok');
    } finally {
      await s.close();
      await devnet.close();
    }
  }, 60_000);
});

describe('the sign-up credit setting', () => {
  it('FAREBOX_SIGNUP_CREDIT=0 opens accounts with nothing, and a free top-up still works', async () => {
    const h = await startHarness('pglite', { env: { FAREBOX_SIGNUP_CREDIT: '0' } });
    try {
      const u = await h.user();
      expect((await u.api('/v1/balance')).body.balance_base_units).toBe(0);
      expect(((await u.api('/v1/transactions')).body as any[]).filter((t) => t.type === 'topup')).toEqual([]);
      expect((await u.api('/v1/topup', { body: { amount: 1.25 } })).body.balance_base_units).toBe(12_500_000);
      expect((await h.gw.core.ledger.verify()).ok).toBe(true);
    } finally {
      await h.close();
    }
  });
});
