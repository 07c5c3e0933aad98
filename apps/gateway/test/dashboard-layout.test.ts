import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { grantOperator } from '@farebox/gateway-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardDir } from '../src/index.js';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';
import { rawClient } from './oauth-browser.js';

const here = dirname(fileURLToPath(import.meta.url));

/** True when the built dashboard is this one (its key-name counter), else it is rebuilt. */
function builtWithLayoutFixes(dist: string): boolean {
  const assets = join(dist, 'assets');
  if (!existsSync(join(dist, 'index.html')) || !existsSync(assets)) return false;
  return readdirSync(assets).some((f) => f.endsWith('.js') && readFileSync(join(assets, f), 'utf8').includes('key-name-count'));
}

// The longest names the gateway accepts, without a hyphen or a space to break at.
const FLAT = 'flatpricedtranslationservice0032';
const DYNAMIC = 'dynamicpricedsummarizerservice32';
const OWN = 'ownservicewithaverylongname00032';
const KEY_NAME = 'ProductionDeployKeyForTheBillingAndAnalyticsPipelineNumber000064';
const APP_NAME = `AnAssistantWithAVeryLongRegisteredClientName${'X'.repeat(56)}`;
const PUBLISHER = `LongPublisherNameWithoutAnySpaceInIt${'Z'.repeat(28)}`;
/** The longest description (512 characters), with a 140-character URL in it. */
const DESCRIPTION =
  `Summarises any document you send it; ${'reads-the-whole-text-first-'.repeat(4)}then answers briefly. See https://docs.example.com/${'a'.repeat(116)}. `.padEnd(
    512,
    'x',
  );
const OPERATOR = `operator.with.a.rather.long.address.${process.pid}@farebox-operations.example.com`;
const WIDTHS = [390, 1280] as const;

/**
 * Every page of the dashboard in Chromium, at phone (390 px) and desktop (1280 px) width, for an account
 * with the longest names the gateway takes (32-character services, 64-character key names, a 100-character
 * app, 500-character descriptions): nothing scrolls sideways, nothing logs a console error or trips the
 * Content-Security-Policy, long table cells keep their full text in a title, pricing follows each service's
 * manifest, the Operator tab is an operator's only, and the key-name field says its limit.
 */
describe('the dashboard with long names, at phone and desktop width', () => {
  let h: Harness;
  let user: TestUser;
  let context: BrowserContext;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;
  /** Console errors, uncaught errors and CSP violations of the page being checked. */
  let problems: string[] = [];

  const cookiesOf = (cookie: string) => cookie.split('; ').map((c) => ({ name: c.slice(0, c.indexOf('=')), value: c.slice(c.indexOf('=') + 1), url: h.url }));

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get update && apt-get install -y chromium`);
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (!builtWithLayoutFixes(dist))
      execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    for (const n of [FLAT, DYNAMIC, OWN]) expect(n).toHaveLength(32);
    expect(DESCRIPTION).toHaveLength(512);
    expect([...KEY_NAME]).toHaveLength(64);

    h = await startHarness('pglite');
    await h.publish(FLAT, { price: '0.01' });
    await h.publish(DYNAMIC, { price: '0.02', priceFn: () => '0.02' });
    user = await h.user();
    const session = { cookie: user.cookie, 'x-csrf-token': user.csrf };
    expect((await user.api('/v1/api-keys', { body: { name: KEY_NAME }, headers: session })).status).toBe(201);
    expect((await user.api('/v1/publisher/activate', { body: { name: PUBLISHER } })).status).toBeLessThan(300);
    const wallet = (await user.api('/v1/me')).body.custodial_wallet as string;
    const { endpoint } = await h.serve(OWN, { price: '0.03', ownerWallet: wallet });
    const registered = await user.api('/v1/agents', { body: { service: OWN, pricePerCallLamports: 300_000, endpoint, description: DESCRIPTION } });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    await rawClient(h.url, { client_name: APP_NAME }).then((c) => c.authorize(user, { dailyLimitUsd: '2.5' }));
    for (const service of [FLAT, DYNAMIC, OWN]) expect((await user.api('/v1/call', { body: { service, payload: { text: 'hi' } } })).status).toBe(200);
    // Settled on chain: the publisher's settlements and the operator's cycles have rows.
    await h.gw.core.settlement.ensureTreasuryFunds(1_000n * 10_000_000n);
    await h.gw.core.settlement.engine!.tick();

    ({ context, page, close: closeBrowser } = await launchChromium(h.url));
    await context.exposeBinding('reportCspViolation', (_source, text: string) => void problems.push(`CSP violation: ${text}`));
    await context.addInitScript(() =>
      document.addEventListener('securitypolicyviolation', (e) =>
        (window as unknown as { reportCspViolation(t: string): void }).reportCspViolation(
          `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`,
        ),
      ),
    );
    page.on('console', (m) => void (m.type() === 'error' && problems.push(`console error: ${m.text()}`)));
    page.on('pageerror', (err) => void problems.push(`page error: ${err.message}`));
    page.on('dialog', (d) => void d.accept());
  }, 180_000);

  afterAll(async () => {
    await closeBrowser?.();
    await h?.close();
  });

  /** Opens `path`, waits for its content, and checks that nothing scrolls sideways and nothing was logged as an error. */
  async function visit(path: string, heading: string, ready?: () => Promise<unknown>) {
    problems = [];
    await page.goto(path);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    await ready?.();
    await page.locator('.loading').first().waitFor({ state: 'detached' });
    await check(path);
  }

  async function check(label: string) {
    const width = page.viewportSize()!.width;
    const layout = await page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      // What sticks out, to name it when the page does scroll.
      wide: Array.from(document.querySelectorAll('body *'))
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
        .slice(0, 5)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className}: ${(e.textContent ?? '').slice(0, 40)}`),
    }));
    expect(layout.scrollWidth, `${label} at ${width} px scrolls sideways: ${layout.wide.join(' | ')}`).toBeLessThanOrEqual(layout.innerWidth);
    expect(problems, `${label} at ${width} px`).toEqual([]);
  }

  /** How many lines the text of `locator` takes. */
  const lines = (locator: Locator) =>
    locator.evaluate((el) => {
      const range = document.createRange();
      range.selectNodeContents(el);
      return range.getClientRects().length;
    });

  it('signed out: the sign-in and sign-up pages', async () => {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 844 });
      await visit('/signin', 'Sign in');
      await visit('/signup', 'Create your account');
    }
  });

  it('an account with services, keys, connections and transactions: every page, no Operator tab', async () => {
    await context.addCookies(cookiesOf(user.cookie));
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 844 });
      const role = page.waitForResponse((r) => r.url().endsWith('/v1/operator/whoami'));
      await visit('/billing', 'Billing', () => page.getByTestId('credits').waitFor());
      expect((await (await role).json()).operator).toBe(false);
      expect(await nav.getByRole('link', { name: 'Operator' }).count()).toBe(0);

      await visit('/credentials', 'Credentials', () => page.getByText(APP_NAME).waitFor());
      const name = page.getByRole('row').filter({ hasText: KEY_NAME }).getByRole('cell').first();
      expect(await name.getAttribute('title')).toBe(KEY_NAME);
      // Next to a 100-character app name and in a row with a 64-character key name, the buttons keep their word whole.
      for (const button of [page.getByRole('button', { name: `Disconnect ${APP_NAME}` }), page.getByRole('button', { name: `Revoke key ${KEY_NAME}` })])
        expect(await lines(button), `${width} px`).toBe(1);

      await visit('/catalog', 'Catalog', () => page.getByRole('link', { name: OWN }).waitFor());
      await visit('/catalog?q=summarizer', 'Catalog', () => page.getByRole('list', { name: 'Results for summarizer' }).waitFor());
      await visit(`/catalog/${FLAT}`, FLAT, () => page.getByTestId('service-price').waitFor());
      await visit(`/catalog/${DYNAMIC}`, DYNAMIC, () => page.getByTestId('pricing-note').waitFor());
      await visit(`/catalog/${OWN}`, OWN, () => page.getByTestId('service-price').waitFor());
      await page.getByRole('button', { name: `Call ${OWN}` }).click();
      await page.getByTestId('call-result').waitFor({ timeout: 20_000 });
      await check(`/catalog/${OWN} after a call`);

      await visit('/transactions', 'Transactions', () => page.getByRole('row').nth(1).waitFor());
      await visit('/publisher', 'Publisher', async () => {
        await page.getByRole('heading', { name: OWN }).waitFor();
        await page.getByRole('table', { name: 'Settlement cycles' }).waitFor();
      });
      await page.getByRole('button', { name: `Edit ${OWN}` }).click();
      await check('/publisher editing a service');
      await visit('/operator', 'Operator', () => page.getByText('This account is not an operator').waitFor());
      await visit('/nowhere', 'Page not found');
    }
  });

  it('says what a service costs as its manifest does: flat, or a dynamic floor', async () => {
    await visit(`/catalog/${FLAT}`, FLAT, () => page.getByText('USDC, flat: every call costs this').waitFor());
    expect(await page.getByRole('main').innerText()).not.toMatch(/dynamic|at least/i);
    await page.getByText('Makes a real paid call of $0.01, paid from your credits first.').waitFor();
    await visit(`/catalog/${DYNAMIC}`, DYNAMIC, () => page.getByTestId('pricing-note').waitFor());
    await page.getByText('USDC, the floor: dynamic pricing, some payloads cost more').waitFor();
    expect(await page.getByTestId('pricing-note').innerText()).toMatch(/^Dynamic price: /);
    await page.getByText('Makes a real paid call of at least $0.02, paid from your credits first.').waitFor();
  });

  it('keeps a long key name whole in a title and the key on one line; the key-name field counts to its limit and shows the API refusal', async () => {
    await page.setViewportSize({ width: 1280, height: 844 });
    await visit('/credentials', 'Credentials', () => page.getByText(APP_NAME).waitFor());
    const row = page.getByRole('row').filter({ hasText: KEY_NAME.slice(0, 20) });
    expect(await row.getByRole('cell').first().getAttribute('title')).toBe(KEY_NAME);
    const key = row.getByRole('cell').nth(1).locator('code');
    const lineHeight = await key.evaluate((el) => Number.parseFloat(getComputedStyle(el.parentElement!).lineHeight));
    expect((await key.boundingBox())!.height).toBeLessThan(lineHeight * 1.5);

    const field = page.getByLabel('Key name');
    const count = page.getByTestId('key-name-count');
    expect(await count.innerText()).toBe('0 / 64 characters');
    await field.fill('x'.repeat(65));
    expect(await count.innerText()).toBe('65 characters: at most 64');
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect((await page.getByRole('alert').innerText()).trim()).toBe('name too long (max 64)');
    // The refusal's 400 is the one thing the browser logged.
    expect(problems).toEqual(['console error: Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    problems = [];
    // 64 characters as people count them: 64 emoji go in whole.
    await field.fill('😀'.repeat(64));
    expect(await field.inputValue()).toBe('😀'.repeat(64));
    expect(await count.innerText()).toBe('64 / 64 characters');
    await check('/credentials with the field filled');
  });

  it('a call the service fails says in the page that the charge was refunded, with nothing spent, at both widths', async () => {
    const DOWN = 'unreachableservicewithlongname32';
    await h.registerRaw(DOWN, 'http://127.0.0.1:9/', '0.01');
    const credits = async () => (await user.api('/v1/balance')).body.balance_base_units as number;
    const before = await credits();
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 844 });
      problems = [];
      await page.goto(`/catalog/${DOWN}`);
      await page.getByRole('heading', { level: 1, name: DOWN }).waitFor();
      // Its /manifest cannot be read either: the page says so (and the browser logs that 500, a real failure).
      await page.getByText("The service's own description of its price could not be read").waitFor();
      await page.getByRole('button', { name: `Call ${DOWN}` }).click();
      const alert = page.getByRole('alert').filter({ hasText: 'The call failed' });
      await alert.waitFor({ timeout: 20_000 });
      expect((await alert.innerText()).trim()).toBe(
        'The call failed: service unreachable: connection refused (ECONNREFUSED); the 0.01 USD charge was refunded to your credits',
      );
      // The browser logged the two 500s it got (the manifest and the call); nothing else, and the page still fits.
      const resource500 = 'console error: Failed to load resource: the server responded with a status of 500 (Internal Server Error)';
      expect(problems).toEqual([resource500, resource500]);
      problems = [];
      await check(`/catalog/${DOWN} after a failed call`);
    }
    expect(await credits()).toBe(before);

    // Failing most of its calls (docs/api.md, "Service health"): within a minute the catalog and its page say so, at both widths.
    for (let i = 0; i < 8; i++) expect((await user.api('/v1/call', { body: { service: DOWN, payload: {} } })).status).toBe(500);
    await h.gw.core.serviceHealth.sync();
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 844 });
      problems = [];
      await page.goto(`/catalog/${DOWN}`);
      await page.getByTestId('health-chart').waitFor();
      expect(await page.getByTestId('health-status').first().innerText()).toBe('failing · 0 % answered');
      expect(await page.getByTestId('health-1h').innerText()).toMatch(/^10 calls · 0 % · p50 \d+ ms · p95 \d+ ms$/);
      // (That page's manifest answered 500, as above: the catalog is checked on its own.)
      problems = [];
      await page.goto('/catalog');
      await page.getByRole('link', { name: DOWN }).waitFor();
      const card = page.locator('li.service-card').filter({ has: page.getByRole('link', { name: DOWN }) });
      expect(await card.getByTestId('health-status').innerText()).toBe('failing · 0 % answered');
      await check(`/catalog with a failing service at ${width} px`);
    }
  });

  it('an operator: the Operator tab and the operator pages, at both widths', async () => {
    // A long address; its refused try before the grant is in the audit log under it.
    const signup = await fetch(`${h.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: OPERATOR, password: 'correct horse battery' }),
    });
    expect(signup.status).toBe(201);
    const cookie = (signup.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
    const csrf = ((await signup.json()) as { csrf_token: string }).csrf_token;
    const denied = await fetch(`${h.url}/v1/operator/settlements/nothing/retry`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf } });
    expect(denied.status).toBe(403);
    await grantOperator(h.gw.core.db, OPERATOR, 'cli:test');
    await context.clearCookies();
    await context.addCookies(cookiesOf(cookie));
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 844 });
      await visit('/operator', 'Operator', async () => {
        await page.getByRole('region', { name: 'Treasury' }).getByText('On chain', { exact: true }).waitFor();
        await page.getByRole('region', { name: 'Audit log' }).getByRole('cell', { name: OPERATOR }).first().waitFor();
        await page.getByRole('region', { name: 'Settlement cycles' }).getByRole('row').nth(1).waitFor();
      });
      expect(await page.getByRole('region', { name: 'Audit log' }).getByRole('cell', { name: OPERATOR }).first().getAttribute('title')).toBe(OPERATOR);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Operator' }).waitFor();
    }
  });
});
