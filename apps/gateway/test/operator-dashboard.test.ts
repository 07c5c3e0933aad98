import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { grantOperator } from '@farebox/gateway-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardDir } from '../src/index.js';
import { startStack, type Stack } from './settlement-kit.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';
import { USDC, fundedNotServed, newCaller, type Caller } from './dispute-kit.js';

const here = dirname(fileURLToPath(import.meta.url));
const SHOTS = join(here, '..', 'test-results', 'screenshots');
const PASSWORD = 'correct horse battery';
const OPERATOR = `ops${process.pid}@farebox.test`;

/** True when the built dashboard contains the operator section (else it is rebuilt). */
function builtWithOperator(dist: string): boolean {
  const assets = join(dist, 'assets');
  if (!existsSync(join(dist, 'index.html')) || !existsSync(assets)) return false;
  return readdirSync(assets).some((f) => f.endsWith('.js') && readFileSync(join(assets, f), 'utf8').includes('op-treasury'));
}

describe('the operator section of the dashboard in Chromium', () => {
  let s: Stack;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;
  let refundMe: { caller: Caller; escrowId: string; balance: bigint };
  let splitMe: { caller: Caller; escrowId: string; balance: bigint };
  let owner: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium`);
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (!builtWithOperator(dist))
      execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    await mkdir(SHOTS, { recursive: true });
    s = await startStack({ env: { FAREBOX_DISPUTE_AUTO_REFUND_MINUTES: 'off' }, gateway: { dashboard: dist } });
    owner = (
      await s.publish('opui-down', '0.5', () => {
        throw new Error('down');
      })
    ).owner;
    await s.publish('opui-ok', '0.02');
    // Some credit calls settled on chain, and two open disputes.
    const u = await s.user({ topup: 5 });
    for (let i = 0; i < 5; i++) await u.api('/v1/call', { body: { service: 'opui-ok', payload: { i } } });
    await s.gw.core.settlement.ensureTreasuryFunds(1_000n * USDC);
    await s.gw.core.settlement.engine!.tick();
    for (const [i, target] of [0, 1].entries()) {
      const caller = await newCaller(s, 3n * USDC);
      const escrowId = await fundedNotServed(caller, 'opui-down');
      await caller.client.dispute(escrowId, { reason: i === 0 ? 'timed out' : 'half an answer' });
      const entry = { caller, escrowId, balance: await s.usdc(caller.publicKey) };
      if (target === 0) refundMe = entry;
      else splitMe = entry;
    }
    ({ page, close: closeBrowser } = await launchChromium(s.url));
    page.on('pageerror', (err) => console.error('page error:', err));
  }, 180_000);

  afterAll(async () => {
    await closeBrowser?.();
    await s?.close();
  });

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  async function signUpAndOpen(email: string) {
    await page.goto('/signup');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    const role = page.waitForResponse((r) => r.url().endsWith('/v1/operator/whoami'));
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Publisher' }).waitFor();
    if (email === OPERATOR) {
      // The operator gets the role once the account exists (the `farebox operator grant` path); the dashboard learns it on the next load.
      await grantOperator(s.gw.core.db, email, 'cli:test');
      await page.reload();
      await nav.getByRole('link', { name: 'Operator' }).click();
    } else {
      // No Operator tab for anyone else; the page itself, opened by its address, says it is not theirs.
      await role;
      expect(await nav.getByRole('link', { name: 'Operator' }).count()).toBe(0);
      await page.goto('/operator');
    }
    await page.getByRole('heading', { level: 1, name: 'Operator' }).waitFor();
  }

  it('tells a non-operator the section is not theirs, and its attempt to use the API is refused and audited', async () => {
    await signUpAndOpen(`nobody${process.pid}@farebox.test`);
    await page.getByText('This account is not an operator').waitFor();
    await shot('operator-01-not-an-operator');
    const refused = await page.evaluate(
      async (id) =>
        (
          await fetch(`/v1/operator/disputes/${id}/resolve`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-csrf-token': decodeURIComponent(document.cookie.split('farebox_csrf=')[1]?.split(';')[0] ?? '') },
            body: JSON.stringify({ action: 'refund' }),
          })
        ).status,
      refundMe.escrowId,
    );
    expect(refused).toBe(403);
    expect(await s.usdc(refundMe.caller.publicKey)).toBe(refundMe.balance);
    await page.getByRole('button', { name: 'Sign out' }).click();
  });

  it('shows the treasury exactly as the devnet holds it, and resolves disputes: a full refund and an exact split', async () => {
    await signUpAndOpen(OPERATOR);
    const treasury = page.getByRole('region', { name: 'Treasury' });
    await treasury.getByText('On chain', { exact: true }).waitFor();
    const onChain = await s.usdc(s.gw.core.treasuryAddress);
    const exact = `${onChain / USDC}.${(onChain % USDC).toString().padStart(7, '0')} USDC`;
    expect(await treasury.getByTestId('treasury-balance').innerText()).toBe(exact);
    expect(await treasury.getByTestId('treasury-balance').getAttribute('title')).toBe(`${onChain} base units`);
    const disputes = page.getByRole('region', { name: 'Disputes' });
    await disputes.locator(`[data-escrow="${refundMe.escrowId}"]`).waitFor();
    // Two open disputes of 0.5 USDC each.
    expect(await treasury.getByTestId('treasury-disputes').getAttribute('title')).toBe('10000000 base units');
    await shot('operator-02-overview');

    await disputes.getByRole('button', { name: `Refund escrow ${refundMe.escrowId} in full` }).click();
    await disputes.locator(`[data-escrow="${refundMe.escrowId}"]`).waitFor({ state: 'detached' });
    expect(await s.usdc(refundMe.caller.publicKey)).toBe(refundMe.balance + 5_000_000n);

    const split = disputes.getByRole('form', { name: `Split escrow ${splitMe.escrowId}` });
    await split.getByLabel('Payer (USDC)').fill('0.2');
    await split.getByLabel('Receiver (USDC)').fill('0.2');
    await split.getByRole('button', { name: 'Split' }).click();
    await disputes
      .getByRole('alert')
      .getByText(/must sum exactly to the escrow balance/)
      .waitFor();
    await shot('operator-03-split-refused');
    const ownerBefore = await s.usdc(owner);
    await split.getByLabel('Receiver (USDC)').fill('0.3');
    await split.getByRole('button', { name: 'Split' }).click();
    await disputes.getByText('No open disputes.').waitFor();
    expect(await s.usdc(splitMe.caller.publicKey)).toBe(splitMe.balance + 2_000_000n);
    expect(await s.usdc(owner)).toBe(ownerBefore + 3_000_000n);
    // The treasury's open-disputes figure follows the resolutions without a Refresh.
    await treasury.locator('[data-testid="treasury-disputes"][title="0 base units"]').waitFor({ timeout: 5_000 }); // sooner than the 10 s poll

    // A dispute opened by a caller meanwhile shows up on its own (the panels poll).
    const late = await newCaller(s, 3n * USDC);
    const lateEscrow = await fundedNotServed(late, 'opui-down');
    await late.client.dispute(lateEscrow, { reason: 'opened while the operator watches' });
    await disputes.locator(`[data-escrow="${lateEscrow}"]`).waitFor({ timeout: 30_000 });
    await treasury.locator('[data-testid="treasury-disputes"][title="5000000 base units"]').waitFor({ timeout: 30_000 });

    await disputes.getByLabel('Show').selectOption('all');
    await disputes.getByText('Resolved (split)').waitFor();
    const audit = page.getByRole('region', { name: 'Audit log' });
    await audit.getByRole('button', { name: 'Refresh' }).click();
    await audit.getByRole('cell', { name: 'dispute.resolve' }).first().waitFor();
    expect(await audit.getByRole('cell', { name: OPERATOR }).count()).toBeGreaterThanOrEqual(2);
    await page.getByRole('region', { name: 'Settlement cycles' }).getByRole('cell', { name: '5' }).first().waitFor();
    await shot('operator-04-resolved');
  });

  it('fits a phone screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Operator' }).waitFor();
    await page.getByRole('region', { name: 'Treasury' }).getByText('On chain', { exact: true }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await shot('operator-05-phone');
  });
});
