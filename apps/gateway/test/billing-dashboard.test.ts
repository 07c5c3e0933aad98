import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccounts, resolveNetwork } from '@farebox/stellar';
import { dashboardDir } from '../src/index.js';
import { createGate, startHttpProxy, type HttpProxy } from './http-proxy-kit.js';
import { startDevnetForSettlement, startStack, type Stack } from './settlement-kit.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';
import { testnetOnDevnet } from './testnet-kit.js';
import { eventually } from '@farebox/test-kit';

const here = dirname(fileURLToPath(import.meta.url));
const USDC = 10_000_000n;

/** True when the built dashboard has the paid top-up with its funding box (else it is rebuilt). */
function builtWithPaidTopups(dist: string): boolean {
  const assets = join(dist, 'assets');
  if (!existsSync(join(dist, 'index.html')) || !existsSync(assets)) return false;
  return readdirSync(assets).some((f) => f.endsWith('.js') && readFileSync(join(assets, f), 'utf8').includes('Copy wallet address'));
}

describe('Billing on a testnet-configured gateway, in Chromium', () => {
  let s: Stack;
  /** The devnet's friendbot behind a gate: while it is shut, a new wallet's set-up (which starts with the friendbot) waits. */
  const friendbot = createGate();
  let friendbotProxy: HttpProxy;
  let context: BrowserContext;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium`);
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (!builtWithPaidTopups(dist))
      execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    const devnet = await startDevnetForSettlement();
    const real = new URL(resolveNetwork({ network: 'local', devnetUrl: devnet.url, env: {} }).friendbotUrl!);
    friendbotProxy = await startHttpProxy(real.origin, () => friendbot.pass());
    s = await startStack({
      devnet,
      env: testnetOnDevnet(devnet, { STELLAR_FRIENDBOT_URL: `${friendbotProxy.url}${real.pathname}` }),
      gateway: { dashboard: dist },
    });
    // The treasury is set up at start (through the friendbot, open until now).
    const chain = createAccounts(s.gw.core.network);
    await eventually('the treasury exists on chain', async () => (await chain.balances(s.gw.core.treasuryAddress)).exists, { timeoutMs: 20_000 });
    ({ context, page, close: closeBrowser } = await launchChromium(s.url));
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
  }, 180_000);

  afterAll(async () => {
    await closeBrowser?.();
    friendbot.open();
    await s?.close();
    await s?.devnet.close();
    await friendbotProxy?.close();
  });

  let wallet: string;
  const go = async (label: string) => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor();
  };

  it('tells a new account its wallet is being set up (Billing and Publisher), and the note goes away by itself once it is ready', async () => {
    friendbot.shut();
    await page.goto('/signup');
    await page.getByLabel('E-mail').fill(`billing${process.pid}@farebox.test`);
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    await page.getByText(/Paid in USDC from your wallet below/).waitFor();
    wallet = (await page.getByTestId('wallet-address').textContent())!.trim();
    expect(wallet).toMatch(/^G[A-Z2-7]{55}$/);
    await page.getByText('Your wallet is being set up on the settlement network').waitFor();
    await page.getByText('Wait until this note is gone before sending USDC to it').waitFor();
    expect(await page.getByRole('button', { name: 'Pay from wallet' }).isDisabled()).toBe(true);
    await page.getByText('Top-ups open once your wallet is set up.').waitFor();
    expect(friendbot.held).toBeGreaterThan(0);
    expect((await fetch(`${s.url}/v1/platform/key`).then((r) => r.json())).topups).toBe('wallet');

    // The publisher page shows the same wallet (as the payout wallet) and says the same.
    await go('Publisher');
    await page.getByLabel('Publisher name').fill('Billing Labs');
    await page.getByRole('button', { name: 'Become a publisher' }).click();
    expect((await page.getByTestId('payout-wallet').textContent())!.trim()).toBe(wallet);
    const publisherNote = page.getByText('This wallet is still being set up on the settlement network');
    await publisherNote.waitFor();

    friendbot.open();
    await publisherNote.waitFor({ state: 'detached', timeout: 30_000 });
    await go('Billing');
    await page.getByText('On-chain balance').waitFor();
    expect(await page.getByText('Your wallet is being set up').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Pay from wallet' }).isEnabled()).toBe(true);
  }, 90_000);

  it('says how to fund an empty wallet (the gateway message, the address and a copy button), and nothing moves', async () => {
    const treasury0 = await s.usdc(s.gw.core.treasuryAddress);
    await page.getByLabel('Top up (USD)').fill('3');
    await page.getByRole('button', { name: 'Pay from wallet' }).click();
    const alert = page.getByRole('alert');
    await alert
      .getByText(
        /insufficient USDC in your wallet: 0 USDC there, 3 needed\. Fund it by sending USDC \(testnet, issuer G[A-Z2-7]{55}\) to G[A-Z2-7]{55}; no memo needed/,
      )
      .waitFor();
    expect((await alert.getByTestId('fund-address').textContent())!.trim()).toBe(wallet);
    await alert.getByRole('button', { name: 'Copy wallet address' }).click();
    await alert.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(wallet);
    expect(await s.usdc(wallet)).toBe(0n);
    expect(await s.usdc(s.gw.core.treasuryAddress)).toBe(treasury0);
    await page.getByTestId('credits').getByText('$5.00').waitFor();
  });

  it('pays from the wallet: a retry after a lost answer reuses the key and pays once; progress while Stellar confirms, then the explorer link; exact on-chain move', async () => {
    await s.devnet.friendbot(wallet, 10n * USDC);
    const treasury0 = await s.usdc(s.gw.core.treasuryAddress);
    const keys: string[] = [];
    let release!: () => void;
    const answered = new Promise<void>((r) => (release = r));
    await page.route('**/v1/topup', async (route) => {
      keys.push(route.request().headers()['idempotency-key']!);
      const response = await route.fetch();
      // The first answer is lost on the way back (the payment itself went through); the retry's is held until the test has seen the progress.
      if (keys.length === 1) return route.abort('connectionreset');
      await answered;
      await route.fulfill({ response });
    });

    await page.getByRole('button', { name: 'Pay from wallet' }).click();
    await page.getByRole('alert').getByText('the gateway cannot be reached').waitFor();
    await page.getByText('This payment may still be on its way. Press “Pay from wallet” again with the same amount to find out').waitFor();
    // It was paid, once.
    expect(await s.usdc(wallet)).toBe(7n * USDC);

    await page.getByRole('button', { name: 'Pay from wallet' }).click();
    await page.getByText('Paying 3 USDC from your wallet… waiting for Stellar to confirm the payment').waitFor();
    await page.getByRole('button', { name: 'Paying…' }).waitFor();
    release();
    await page.getByText('Paid 3 USDC from your wallet: added $3 to your credits.').waitFor({ timeout: 20_000 });
    expect(await page.getByText('Paying 3 USDC from your wallet').count()).toBe(0);
    const link = page.getByRole('link', { name: /Payment on explorer/ });
    expect(await link.getAttribute('href')).toMatch(/\/explorer\/local\/tx\/[0-9a-f]{64}$/);
    await page.getByTestId('credits').getByText('$8.00').waitFor();
    await page.getByTestId('wallet-balance').getByText('$7.00').waitFor();
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(await s.usdc(wallet)).toBe(7n * USDC);
    expect(await s.usdc(s.gw.core.treasuryAddress)).toBe(treasury0 + 3n * USDC);
    await page.unroute('**/v1/topup');
  }, 90_000);

  it('sends a double click once, with a new key for the new top-up, and lists the paid top-ups with their explorer links', async () => {
    const treasury0 = await s.usdc(s.gw.core.treasuryAddress);
    const keys: string[] = [];
    await page.route('**/v1/topup', async (route) => {
      keys.push(route.request().headers()['idempotency-key']!);
      await route.continue();
    });
    await page.getByLabel('Top up (USD)').fill('2');
    await page.getByRole('button', { name: 'Pay from wallet' }).dblclick();
    await page.getByText('Paid 2 USDC from your wallet: added $2 to your credits.').waitFor({ timeout: 20_000 });
    await page.getByTestId('credits').getByText('$10.00').waitFor();
    expect(keys).toHaveLength(1);
    expect(await s.usdc(wallet)).toBe(5n * USDC);
    expect(await s.usdc(s.gw.core.treasuryAddress)).toBe(treasury0 + 2n * USDC);
    await page.unroute('**/v1/topup');

    await go('Transactions');
    const rows = page.getByRole('row');
    await rows.nth(1).waitFor();
    const body = (await rows.allInnerTexts()).slice(1);
    expect(body).toHaveLength(3);
    expect(body[0]).toMatch(/Top-up from wallet[\s\S]*\+\$2\.00[\s\S]*completed/i);
    expect(body[1]).toMatch(/Top-up from wallet[\s\S]*\+\$3\.00[\s\S]*completed/i);
    expect(body[2]).toMatch(/Sign-up credit[\s\S]*\+\$5\.00/);
    const txs = (await page
      .getByRole('table')
      .getByRole('link')
      .evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href))) as string[];
    expect(txs).toHaveLength(2);
    for (const href of txs) expect(href).toMatch(/\/explorer\/local\/tx\/[0-9a-f]{64}$/);
  }, 60_000);
});
