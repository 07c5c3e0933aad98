import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardDir } from '../src/index.js';
import { startDevnetForSettlement, startStack, type Stack } from './settlement-kit.js';
import { testnetOnDevnet } from './testnet-kit.js';

const CHROMIUM = '/usr/bin/chromium';
const here = dirname(fileURLToPath(import.meta.url));
const USDC = 10_000_000n;

/** True when the built dashboard has the paid top-up (else it is rebuilt). */
function builtWithPaidTopups(dist: string): boolean {
  const assets = join(dist, 'assets');
  if (!existsSync(join(dist, 'index.html')) || !existsSync(assets)) return false;
  return readdirSync(assets).some((f) => f.endsWith('.js') && readFileSync(join(assets, f), 'utf8').includes('Pay from wallet'));
}

describe('Billing on a testnet-configured gateway, in Chromium', () => {
  let s: Stack;
  let context: BrowserContext;
  let page: Page;
  let profile: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium`);
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (!builtWithPaidTopups(dist)) execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    const devnet = await startDevnetForSettlement();
    s = await startStack({ devnet, env: testnetOnDevnet(devnet), gateway: { dashboard: dist } });
    profile = await mkdtemp(join(tmpdir(), 'farebox-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 900 },
      baseURL: s.url,
    });
    page = context.pages()[0] ?? (await context.newPage());
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await s?.close();
    await s?.devnet.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('pays a top-up from the wallet, shows the wait and the explorer link, and moves exactly the amount on chain', async () => {
    const email = `billing${process.pid}@farebox.test`;
    await page.goto('/signup');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    await page.getByText(/Paid in USDC from your wallet below/).waitFor();
    // The wallet's set-up note goes away by itself once the wallet is on chain.
    await page.getByText(/Your wallet is being set up/).waitFor({ state: 'detached', timeout: 20_000 });
    const wallet = (await page.getByTestId('wallet-address').textContent())!.trim();

    // An empty wallet: the gateway's message, with the address to fund; nothing moves.
    await page.getByLabel('Top up (USD)').fill('3');
    await page.getByRole('button', { name: 'Pay from wallet' }).click();
    await page.getByText(/insufficient USDC in your wallet: 0 USDC there, 3 needed/).waitFor();
    expect(await page.getByText(new RegExp(wallet)).count()).toBeGreaterThan(0);

    await s.devnet.friendbot(wallet, 10n * USDC);
    const treasury0 = await s.usdc(s.gw.core.treasuryAddress);
    await page.getByRole('button', { name: 'Pay from wallet' }).click();
    await page.getByText('Paid 3 USDC from your wallet: added $3 to your credits.').waitFor({ timeout: 20_000 });
    const link = page.getByRole('link', { name: /Payment on explorer/ });
    expect(await link.getAttribute('href')).toMatch(new RegExp(`/explorer/local/tx/[0-9a-f]{64}$`));
    await page.getByTestId('credits').getByText('$8.00').waitFor();
    expect(await s.usdc(wallet)).toBe(7n * USDC);
    expect(await s.usdc(s.gw.core.treasuryAddress)).toBe(treasury0 + 3n * USDC);
  }, 90_000);
});
