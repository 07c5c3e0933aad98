import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardDir } from '../src/index.js';
import { startHarness, type Harness } from './harness.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';

const here = dirname(fileURLToPath(import.meta.url));
const SHOTS = join(here, '..', 'test-results', 'screenshots');
const PASSWORD = 'correct horse battery';

/** The dashboard in Debian's Chromium against a real gateway (embedded devnet, real SDK services). */
describe('the web dashboard in a real browser', () => {
  let h: Harness;
  let context: BrowserContext;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;
  const email = `dash${Date.now()}@example.com`;
  let wallet = '';

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium is missing at ${CHROMIUM}: the browser tests need Debian's Chromium. Install it with: apt-get update && apt-get install -y chromium chromium-driver`,
      );
    }
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (!existsSync(join(dist, 'index.html'))) {
      execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    }
    await mkdir(SHOTS, { recursive: true });
    h = await startHarness('pglite');
    await h.publish('echo', { price: '0.01', pricingNote: 'Flat: 0.01 USDC a call, whatever the payload' });
    await h.publish('geocoder', { price: '0.02' });
    ({ context, page, close: closeBrowser } = await launchChromium(h.url));
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.url });
    page.on('dialog', (d) => void d.accept());
    page.on('pageerror', (err) => console.error('page error:', err));
  }, 180_000);

  afterAll(async () => {
    await closeBrowser?.();
    await h?.close();
  });

  async function shot(name: string) {
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  }

  async function text(locator: Locator): Promise<string> {
    await locator.first().waitFor();
    return (await locator.first().innerText()).trim();
  }

  async function go(label: string) {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor();
  }

  it('serves the dashboard at / and on deep links with a strict CSP, never in place of the API, OAuth or MCP paths', async () => {
    for (const path of ['/', '/billing', '/catalog/echo']) {
      const r = await fetch(`${h.url}${path}`, { headers: { accept: 'text/html' } });
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-security-policy')).toMatch(/^default-src 'self';.*frame-ancestors 'none'/);
      expect(await r.text()).toContain('<div id="root"></div>');
    }
    for (const path of [
      '/v1/nothing',
      '/auth/nothing',
      '/health',
      '/mcp',
      '/.well-known/oauth-authorization-server',
      '/authorize',
      '/token',
      '/register',
      '/revoke',
      '/devnet/nothing',
    ]) {
      const r = await fetch(`${h.url}${path}`, { headers: { accept: 'text/html' } });
      expect(await r.text(), path).not.toContain('<div id="root"></div>');
    }
  });

  it('signs up from the form and lands on Billing with the 5 USD sign-up credit and a wallet', async () => {
    await page.goto('/');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await shot('01-sign-in');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Sign up' }).click();
    expect(await text(page.getByRole('alert'))).toBe('the password needs at least 8 characters');
    await page.getByLabel('Password').fill(PASSWORD);
    await shot('02-sign-up');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    expect(page.url()).toBe(`${h.url}/billing`);
    expect(await text(page.getByTestId('credits'))).toBe('$5.00');
    wallet = await text(page.getByTestId('wallet-address'));
    expect(wallet).toMatch(/^G[A-Z2-7]{55}$/);
    await page.getByText('On-chain balance').waitFor();
  });

  it('refuses an out-of-range top-up with the spec message and adds a valid one to the credits', async () => {
    await page.getByLabel('Top up (USD)').fill('1500');
    await page.getByRole('button', { name: 'Add credits' }).click();
    expect(await text(page.getByRole('alert'))).toBe('invalid amount (must be 0 < n <= 1000)');
    await page.getByLabel('Top up (USD)').fill('0');
    await page.getByRole('button', { name: 'Add credits' }).click();
    expect(await text(page.getByRole('alert'))).toBe('invalid amount (must be 0 < n <= 1000)');
    expect(await text(page.getByTestId('credits'))).toBe('$5.00');
    await page.getByLabel('Top up (USD)').fill('12.5');
    await page.getByRole('button', { name: 'Add credits' }).click();
    // The local network's top-ups are free test credits, and the page says so.
    await page.getByText('Added $12.5 to your credits. These are free test credits: nothing was paid.').waitFor();
    await page.getByText('Free test credits on this network: nothing is paid.').waitFor();
    await page.getByTestId('credits').getByText('$17.50').waitFor();
    await shot('03-billing');
  });

  it('creates an API key shown once with a copy button, which works against the API, lists it by prefix and revokes it', async () => {
    await go('Credentials');
    await page.getByText('No connected apps.', { exact: false }).waitFor();
    await page.getByLabel('Key name').fill('laptop script');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await text(page.getByTestId('new-key'));
    expect(key).toMatch(/^sk_live_[0-9A-Za-z]+$/);
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    const row = page.getByRole('row').filter({ hasText: 'laptop script' });
    expect(await text(row)).toContain(`${key.slice(0, 14)}…`);
    expect(await text(row)).toContain('never');
    await shot('04-credentials');

    const me = await fetch(`${h.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } });
    expect(me.status).toBe(200);
    expect((await me.json()).email).toBe(email);

    await page.getByRole('button', { name: 'I have saved it, hide the key' }).click();
    expect(await page.getByTestId('new-key').count()).toBe(0);
    await page.getByRole('button', { name: 'Revoke key laptop script' }).click();
    await page.getByText('No API keys yet.').waitFor();
    expect((await fetch(`${h.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
    await page.getByLabel('Key name').evaluate((el) => el.removeAttribute('maxlength'));
    await page.getByLabel('Key name').fill('x'.repeat(65));
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await text(page.getByRole('alert'))).toBe('name too long (max 64)');
    // 64 characters are 64 code points: 64 emoji (128 UTF-16 units) are a valid name, typed in full.
    const emoji = '😀'.repeat(64);
    await page.getByLabel('Key name').fill(emoji);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('new-key').waitFor();
    expect(await text(page.getByRole('row').filter({ hasText: '😀' }))).toContain(emoji);
  });

  it('finds a service by search and pays for a call from its page, showing the result, the cost and the payment trace', async () => {
    await go('Catalog');
    await page.getByRole('link', { name: 'geocoder' }).waitFor();
    await page.getByLabel('Search services').fill('zzqqxx nonsense');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No service matches “zzqqxx nonsense”.').waitFor();
    await page.getByLabel('Search services').fill('echo');
    await page.getByRole('button', { name: 'Search' }).click();
    const results = page.getByRole('list', { name: 'Results for echo' });
    await results.waitFor();
    expect(await text(results.getByRole('heading', { level: 2 }))).toBe('echo');
    await shot('05-catalog-search');

    await results.getByRole('link', { name: 'echo' }).click();
    await page.getByRole('heading', { level: 1, name: 'echo' }).waitFor();
    expect(await text(page.getByTestId('service-price'))).toBe('$0.01');
    // The pricing note comes from the service's own /manifest, through the gateway.
    expect(await text(page.getByTestId('pricing-note'))).toBe('Pricing: Flat: 0.01 USDC a call, whatever the payload');
    await page.getByLabel('Payload (JSON object)').fill('{ "text": ');
    await page.getByRole('button', { name: 'Call echo' }).click();
    expect(await text(page.getByRole('alert'))).toMatch(/^The call failed: the payload is not valid JSON/);
    await page.getByLabel('Payload (JSON object)').fill('{ "text": "hello from the browser" }');
    await page.getByRole('button', { name: 'Call echo' }).click();
    const result = page.getByTestId('call-result');
    await result.waitFor({ timeout: 20_000 });
    expect(JSON.parse(await text(result))).toEqual({ echo: { text: 'hello from the browser' } });
    expect(await text(page.getByTestId('call-cost'))).toBe('$0.01');
    const trace = page.getByTestId('trace');
    const steps = await trace.getByRole('listitem').allInnerTexts();
    expect(steps.length).toBeGreaterThanOrEqual(3);
    expect(steps.join('\n')).toMatch(/Hold credits[\s\S]*Call service[\s\S]*Post payment/);
    await shot('06-service-try-it');

    // Its health (docs/api.md, "Service health"): the call just made is counted once the gateway writes its counts.
    await h.gw.core.serviceHealth.sync();
    await page.reload();
    await page.getByTestId('health-chart').waitFor();
    expect(await text(page.getByTestId('health-status').first())).toBe('new · too few calls to judge');
    expect(await text(page.getByTestId('health-1h'))).toMatch(/^1 calls · 100 % · p50 \d+ ms · p95 \d+ ms$/);
    expect(await page.getByTestId('health-chart').locator('rect.bar-failed').count()).toBe(24);
    await page.getByRole('button', { name: '7 days' }).click();
    await page.getByRole('img', { name: 'Calls per 6 hours, last 7 days (UTC)' }).waitFor();
    await go('Catalog');
    await page.getByRole('link', { name: 'echo' }).waitFor();
    expect(await page.getByTestId('health-status').count()).toBeGreaterThanOrEqual(2);
  });

  it('lists the call and the top-up newest first on Transactions, with status badges', async () => {
    await go('Transactions');
    const rows = page.getByRole('row');
    await rows.nth(1).waitFor();
    const body = (await rows.allInnerTexts()).slice(1);
    expect(body).toHaveLength(3);
    expect(body[0]).toMatch(/Call[\s\S]*echo[\s\S]*−\$0\.01[\s\S]*completed/i);
    expect(body[1]).toMatch(/Free top-up[\s\S]*\+\$12\.50[\s\S]*completed/i);
    expect(body[2]).toMatch(/Sign-up credit[\s\S]*\+\$5\.00/);
    await shot('07-transactions');
  });

  it('activates publishing, registers a service served for its wallet, and sees a paid call to it in the overview and analytics', async () => {
    await go('Publisher');
    await page.getByLabel('Publisher name').fill('Browser Labs');
    await shot('08-publisher-activate');
    await page.getByRole('button', { name: 'Become a publisher' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByText('You have not registered a service from the dashboard yet.').waitFor();
    await page.getByText('No settlement yet', { exact: false }).waitFor();

    const backend = await h.serve('dashsvc', { price: '0.05', ownerWallet: wallet });
    // The gateway's name policy, checked in the form before anything is signed.
    await page.getByLabel('Service name').fill('Dash_Svc');
    await page.getByLabel('Price per call (USDC)').fill('0.05');
    await page.getByRole('button', { name: 'Register service' }).click();
    expect(await text(page.getByRole('alert'))).toBe(
      'Service name: invalid service name: use 1 to 32 lower-case letters, digits and single hyphens, starting and ending with a letter or digit',
    );
    await page.getByLabel('Service name').fill('dashsvc');
    await page.getByLabel('Price per call (USDC)').fill('0.123456789');
    await page.getByLabel('Endpoint URL').fill(backend.endpoint);
    await page.getByLabel('Description').fill('Echoes the payload back; registered from the dashboard.');
    await page.getByRole('button', { name: 'Register service' }).click();
    expect(await text(page.getByRole('alert'))).toBe('Price: at most 7 decimals (1 USDC = 10,000,000 base units)');
    await page.getByLabel('Price per call (USDC)').fill('0.05');
    await page.getByRole('button', { name: 'Register service' }).click();
    await page.getByText('Registered dashsvc.').waitFor({ timeout: 30_000 });
    const item = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'dashsvc' }) });
    expect(await text(item)).toContain('$0.05 / call');

    await item.getByRole('button', { name: 'Edit dashsvc' }).click();
    await page.getByLabel('Description').first().fill('Echoes any JSON payload back.');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved dashsvc.').waitFor({ timeout: 30_000 });
    expect(await text(item)).toContain('Echoes any JSON payload back.');

    await item.getByRole('link', { name: 'dashsvc' }).click();
    await page.getByRole('heading', { level: 1, name: 'dashsvc' }).waitFor();
    await page.getByLabel('Payload (JSON object)').fill('{ "n": 1 }');
    await page.getByRole('button', { name: 'Call dashsvc' }).click();
    await page.getByTestId('call-result').waitFor({ timeout: 20_000 });
    expect(await text(page.getByTestId('call-cost'))).toBe('$0.05');

    await go('Publisher');
    expect(await text(page.getByTestId('earned'))).toBe('$0.0475');
    const summary = page.getByTestId('analytics-summary');
    expect(await text(summary)).toBe('$0.0475 net from 1 call over 30 days (net of the fee).');
    await page.getByRole('button', { name: '7 days' }).click();
    await summary.getByText('over 7 days').waitFor();
    await page.getByLabel('Days', { exact: true }).fill('91');
    expect(await text(page.getByRole('alert'))).toBe('choose 1 to 90 days');
    await page.getByLabel('Days', { exact: true }).fill('14');
    await summary.getByText('$0.0475 net from 1 call over 14 days').waitFor();
    const bars = page.getByTestId('earnings-chart').locator('rect.bar');
    expect(await bars.count()).toBe(14);
    expect(Number(await bars.last().getAttribute('height'))).toBeGreaterThan(100);
    await shot('09-publisher');
  });

  it('removes a registered service from the registry', async () => {
    const endpoint = (await h.serve('dashtmp', { price: '0.01', ownerWallet: wallet })).endpoint;
    await page.getByLabel('Service name').fill('dashtmp');
    await page.getByLabel('Price per call (USDC)').fill('0.01');
    await page.getByLabel('Endpoint URL').fill(endpoint);
    await page.getByLabel('Description').fill('temporary');
    await page.getByRole('button', { name: 'Register service' }).click();
    await page.getByText('Registered dashtmp.').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Remove dashtmp' }).click();
    await page.getByText('Removed dashtmp.').waitFor({ timeout: 30_000 });
    // The notice comes first; the list reloads right after it.
    await page.getByRole('heading', { name: 'dashtmp' }).waitFor({ state: 'detached', timeout: 30_000 });
    expect(await page.getByRole('heading', { name: 'dashtmp' }).count()).toBe(0);
    const catalog = await (await fetch(`${h.url}/v1/agents`, { headers: { cookie: await cookieHeader() } })).json();
    expect(catalog.map((s: { service: string }) => s.service)).not.toContain('dashtmp');
  });

  it('shows the API error on a wrong password and signs back in to the page that was asked for', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect((await fetch(`${h.url}/v1/me`, { headers: { cookie: await cookieHeader() } })).status).toBe(401);
    await page.goto('/transactions');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(page.url()).toBe(`${h.url}/signin?next=%2Ftransactions`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('wrong password!');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await text(page.getByRole('alert'))).toBe('invalid email or password');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Transactions' }).waitFor();
    await go('Billing');
    await page.getByTestId('credits').getByText('$17.44').waitFor();
  });

  it('fits a phone-sized screen without horizontal scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [label, name] of [
      ['Billing', '10-phone-billing'],
      ['Transactions', '11-phone-transactions'],
      ['Publisher', '12-phone-publisher'],
    ] as const) {
      await go(label);
      await page.locator('.loading').first().waitFor({ state: 'detached' });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      await shot(name);
      expect(overflow, label).toBeLessThanOrEqual(0);
    }
    await page.goto('/catalog/echo');
    await page.getByRole('heading', { level: 1, name: 'echo' }).waitFor();
    await shot('13-phone-service');
  });

  async function cookieHeader(): Promise<string> {
    return (await context.cookies(h.url)).map((c) => `${c.name}=${c.value}`).join('; ');
  }
});
