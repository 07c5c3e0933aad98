import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveNetwork } from '@farebox/stellar';
import {
  createGate,
  startDevnetForSettlement,
  startHttpProxy,
  startStack,
  testnetOnDevnet,
  type HttpProxy,
  type KitUser,
  type Stack,
} from '@farebox/gateway/testing';
import { eventually } from '@farebox/test-kit';
import { runFarebox } from './cli.js';

const USDC = 10_000_000n;
const json = (s: string) => JSON.parse(s) as any;

/** `farebox` with a fresh configuration folder, signed in with the user's API key. */
async function cliEnv(url: string, user: KitUser): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'farebox-cli-topup-'));
  return { PATH: process.env.PATH ?? '', HOME: dir, FAREBOX_CONFIG_DIR: join(dir, 'farebox'), FAREBOX_URL: url, FAREBOX_API_KEY: user.key, BROWSER: 'none' };
}

describe('farebox topup', () => {
  let devnet: Stack['devnet'];
  let local: Stack;
  let testnet: Stack;
  /** The friendbot new wallets are set up with, behind a gate (a wallet stays "being set up" while it is shut). */
  const friendbot = createGate();
  /** Horizon as the testnet gateway sees it: payments wait behind a gate while it is shut (slow to confirm). */
  const payments = createGate();
  const proxies: HttpProxy[] = [];

  beforeAll(async () => {
    devnet = await startDevnetForSettlement();
    const net = resolveNetwork({ network: 'local', devnetUrl: devnet.url, env: {} });
    const fb = new URL(net.friendbotUrl!);
    const fbProxy = await startHttpProxy(fb.origin, () => friendbot.pass());
    const horizon = new URL(net.horizonUrl);
    const horizonProxy = await startHttpProxy(horizon.origin, async (req) => {
      if (req.method === 'POST' && /\/transactions\b/.test(req.url ?? '')) await payments.pass();
    });
    proxies.push(fbProxy, horizonProxy);
    local = await startStack({ devnet });
    testnet = await startStack({
      devnet,
      env: testnetOnDevnet(devnet, { STELLAR_FRIENDBOT_URL: `${fbProxy.url}${fb.pathname}`, STELLAR_HORIZON_URL: `${horizonProxy.url}${horizon.pathname}` }),
    });
  }, 240_000);

  afterAll(async () => {
    friendbot.open();
    await testnet?.close();
    await local?.close();
    await devnet?.close();
    for (const p of proxies) await p.close();
  });

  it('on the local network: free test credits, said so; the same --idempotency-key credits once; --json is the API answer', async () => {
    const u = await local.user();
    const e = await cliEnv(local.url, u);
    const first = await runFarebox(['topup', '5', '--idempotency-key', 'free-k1'], { env: e });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('Added $5.00 of free test credits (nothing was paid). Credits now $10.00.\n');
    expect(first.stderr).toBe('');
    const again = await runFarebox(['topup', '5', '--idempotency-key', 'free-k1'], { env: e });
    expect(again.stdout).toBe(first.stdout);
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(100_000_000);
    const other = await runFarebox(['topup', '6', '--idempotency-key', 'free-k1'], { env: e });
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^farebox: idempotency key reused with a different request \(HTTP 409/m);

    const asJson = await runFarebox(['topup', '1.5', '--json'], { env: e });
    expect(asJson.stderr).toBe('');
    expect(json(asJson.stdout)).toMatchObject({
      balance_base_units: 115_000_000,
      topup: { type: 'topup', amount_base_units: 15_000_000, status: 'completed', paid_with: null, explorer_url: null },
    });
    const txs = await runFarebox(['transactions'], { env: e });
    expect(txs.stdout).toMatch(/^\S+ \S+\s+topup \(free\)\s+\$1\.50\s+completed/m);
    expect(txs.stdout).toMatch(/sign-up credit\s+\$5\.00/);
  });

  it('on a testnet-configured gateway: says the wallet is being set up, then pays from it with progress and the explorer link, once per key', async () => {
    const chain = (a: string) => testnet.usdc(a);
    friendbot.shut();
    const u = await testnet.user();
    const e = await cliEnv(testnet.url, u);

    // While the wallet is being set up: balance and whoami say so, a top-up is refused (503) with nothing moved.
    try {
      await checkBeingSetUp();
    } finally {
      friendbot.open();
    }
    async function checkBeingSetUp() {
      const balance = await runFarebox(['balance'], { env: e });
      expect(balance.stdout).toMatch(
        /^note\s+your wallet is still being set up on chain \(account and USDC trustline\): wait a moment before sending USDC to it$/m,
      );
      expect((await runFarebox(['whoami'], { env: e })).stdout).toMatch(new RegExp(`^wallet\\s+${u.wallet} \\(still being set up on chain`, 'm'));
      expect(json((await runFarebox(['balance', '--json'], { env: e })).stdout).wallet_status).toBe('provisioning');
      const early = await runFarebox(['topup', '1'], { env: e });
      expect(early.code).toBe(1);
      expect(early.stderr).toContain(`farebox: your wallet ${u.wallet} is still being set up on chain; try again in a moment (HTTP 503`);
      expect(early.stderr).not.toContain('To see what became');
    }
    await eventually('the wallet is set up on chain', async () => (await u.api('/v1/wallet')).body.status === 'ok', { timeoutMs: 30_000 });
    expect((await runFarebox(['balance'], { env: e })).stdout).not.toContain('note');

    // An empty wallet: the gateway's message as it is, nothing moves.
    const poor = await runFarebox(['topup', '9'], { env: e });
    expect(poor.code).toBe(1);
    expect(poor.stdout).toBe('');
    expect(poor.stderr).toMatch(
      new RegExp(
        `^farebox: insufficient USDC in your wallet: 0 USDC there, 9 needed\\. Fund it by sending USDC \\(testnet, issuer G[A-Z2-7]{55}\\) to ${u.wallet}; no memo needed \\(HTTP 402, request id [0-9a-f-]{36}\\)$`,
        'm',
      ),
    );

    await devnet.friendbot(u.wallet, 10n * USDC);
    const treasury0 = await chain(testnet.gw.core.treasuryAddress);
    const first = await runFarebox(['topup', '2', '--idempotency-key', 'cli-k1'], { env: e });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe('Paying 2 USDC from your wallet to the platform; waiting for the settlement network to confirm...\n');
    const lines = first.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('Paid 2 USDC from your wallet. Credits now $7.00.');
    const hash = /^ {2}payment {3}([0-9a-f]{64})$/.exec(lines[1]!)?.[1];
    expect(hash, first.stdout).toBeDefined();
    expect(lines[2]).toBe(`  explorer  ${devnet.url}/explorer/local/tx/${hash}`);
    expect(await chain(u.wallet)).toBe(8n * USDC);
    expect(await chain(testnet.gw.core.treasuryAddress)).toBe(treasury0 + 2n * USDC);

    // The same key again: the first answer, paid once.
    const again = await runFarebox(['topup', '2', '--idempotency-key', 'cli-k1'], { env: e });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(first.stdout);
    expect(await chain(u.wallet)).toBe(8n * USDC);
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(70_000_000);

    // --json: the API answer on stdout, nothing else on stderr.
    const asJson = await runFarebox(['topup', '1', '--json'], { env: e });
    expect(asJson.code, asJson.stderr).toBe(0);
    expect(asJson.stderr).toBe('');
    expect(json(asJson.stdout)).toMatchObject({
      balance_base_units: 80_000_000,
      topup: {
        paid_with: 'wallet',
        status: 'completed',
        amount_base_units: 10_000_000,
        explorer_url: expect.stringMatching(/\/explorer\/local\/tx\/[0-9a-f]{64}$/),
      },
    });
    expect(await chain(u.wallet)).toBe(7n * USDC);

    const txs = await runFarebox(['transactions'], { env: e });
    expect(txs.stdout).toMatch(new RegExp(`topup \\(wallet\\)\\s+\\$2\\.00\\s+completed\\s+${devnet.url}/explorer/local/tx/${hash}`));
    expect(txs.stdout.match(/topup \(wallet\)/g)).toHaveLength(2);
  }, 120_000);

  it('asks again with the same key when the answer is lost, waits out the attempt still in progress, and pays once', async () => {
    const u = await testnet.user();
    await testnet.fundWallet(u, 5n * USDC);
    const treasury0 = await testnet.usdc(testnet.gw.core.treasuryAddress);
    // In front of the gateway: the first top-up reaches it, its answer never comes back.
    const keys: string[] = [];
    const gateway = await startHttpProxy(testnet.url, (req) => {
      if (req.method !== 'POST' || req.url !== '/v1/topup') return;
      keys.push(String(req.headers['idempotency-key']));
      // The payment confirms once the CLI has asked again and been told to wait (the third request).
      if (keys.length >= 3) payments.open();
      if (keys.length === 1) return 'drop';
    });
    proxies.push(gateway);
    payments.shut();
    try {
      const e = { ...(await cliEnv(gateway.url, u)) };
      const r = await runFarebox(['topup', '3'], { env: e });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/^No answer from the gateway \(.+\); asking again with the same Idempotency-Key topup-[\w-]+ \(it pays once\)\.\.\.$/m);
      expect(r.stderr).not.toMatch(/\b(GET|POST) \//);
      expect(r.stderr).toMatch(/^An earlier attempt with the Idempotency-Key topup-[\w-]+ is still being processed; waiting for its answer\.\.\.$/m);
      expect(r.stdout).toMatch(/^Paid 3 USDC from your wallet\. Credits now \$8\.00\.$/m);
    } finally {
      payments.open();
    }
    expect(keys.length).toBeGreaterThanOrEqual(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^topup-[\w-]{16}$/);
    expect(await testnet.usdc(u.wallet)).toBe(2n * USDC);
    expect(await testnet.usdc(testnet.gw.core.treasuryAddress)).toBe(treasury0 + 3n * USDC);
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(80_000_000);
  }, 120_000);
});
