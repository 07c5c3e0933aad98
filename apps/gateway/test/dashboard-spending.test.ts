import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardDir } from '../src/index.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { rawClient } from './oauth-browser.js';

const here = dirname(fileURLToPath(import.meta.url));

/** True when the built dashboard has the spending policy fields, else it is rebuilt. */
function builtWithPolicies(dist: string): boolean {
  const assets = join(dist, 'assets');
  if (!existsSync(join(dist, 'index.html')) || !existsSync(assets)) return false;
  return readdirSync(assets).some((f) => f.endsWith('.js') && readFileSync(join(assets, f), 'utf8').includes('policy-fields'));
}

/**
 * The Credentials page's spending policies in Chromium at desktop and phone
 * width: a key created with a policy shows its spend bar, the Limits editor
 * changes it, a connected app shows and edits its own; nothing scrolls
 * sideways and nothing logs an error.
 */
describe('spending policies on the Credentials page', () => {
  let h: Harness;
  let user: TestUser;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;
  let problems: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get update && apt-get install -y chromium`);
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (!builtWithPolicies(dist))
      execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    h = await startHarness('pglite');
    await h.publish('echo', { price: '0.01' });
    user = await h.user();
    await rawClient(h.url, { client_name: 'Assistant' }).then((c) => c.authorize(user, { dailyLimitUsd: '2.5' }));
    let context: Awaited<ReturnType<typeof launchChromium>>['context'];
    ({ context, page, close: closeBrowser } = await launchChromium(h.url));
    await context.addCookies(user.cookie.split('; ').map((c) => ({ name: c.slice(0, c.indexOf('=')), value: c.slice(c.indexOf('=') + 1), url: h.url })));
    page.on('console', (m) => void (m.type() === 'error' && problems.push(`console error: ${m.text()}`)));
    page.on('pageerror', (err) => void problems.push(`page error: ${err.message}`));
  }, 180_000);

  afterAll(async () => {
    await closeBrowser?.();
    await h?.close();
  });

  async function check(label: string) {
    const layout = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
    expect(layout.scrollWidth, `${label} scrolls sideways`).toBeLessThanOrEqual(layout.innerWidth);
    expect(problems, label).toEqual([]);
  }

  for (const width of [1280, 390] as const) {
    it(`creates a key with a policy, shows its spend bar and edits it; shows and edits a connection's (${width} px)`, async () => {
      problems = [];
      await page.setViewportSize({ width, height: 844 });
      await page.goto('/credentials');
      await page.getByRole('heading', { level: 1, name: 'Credentials' }).waitFor();
      const name = `agent-${width}`;
      await page.getByLabel('Key name').fill(name);
      const create = page.getByRole('form').or(page.locator('form')).first();
      await create.getByLabel('Limit (USD)').fill('0.05');
      await create.getByLabel('Period').selectOption('day');
      await create.getByLabel('Only these services').fill('echo');
      await create.getByLabel('Max per call (USD)').fill('0.02');
      await page.getByRole('button', { name: 'Create key' }).click();
      const key = (await page.getByTestId('new-key').textContent())!.trim();
      const row = page.getByRole('row').filter({ hasText: name });
      await row.getByText('$0.00 of $0.05 a day').waitFor();
      await row.getByText('only echo · at most $0.02 a call').waitFor();
      expect(await row.getByRole('meter').getAttribute('aria-valuemax')).toBe('0.05');
      await check(`/credentials with a new key at ${width} px`);

      // The key's policy as the API has it.
      const listed = (await user.api('/v1/api-keys')).body.find((k: { name: string }) => k.name === name);
      expect(listed).toMatchObject({ limit_usd: 0.05, limit_period: 'day', allowed_services: ['echo'], max_call_usd: 0.02, remaining_usd: 0.05 });

      // A call made with the key fills its bar: $0.01 of $0.05 this day.
      expect((await user.api('/v1/call', { body: { service: 'echo', payload: {} }, headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
      await page.reload();
      await row.getByText('$0.01 of $0.05 a day').waitFor();
      expect(await row.getByRole('meter').getAttribute('aria-valuenow')).toBe('0.01');
      await check(`/credentials after a call at ${width} px`);

      await page.getByRole('button', { name: `Edit spending policy of ${name}` }).click();
      const editor = page.getByRole('form', { name: `Spending policy of ${name}` });
      await editor.getByLabel('Limit (USD)').fill('0.1');
      await editor.getByLabel('Period').selectOption('week');
      await check(`/credentials editing a key at ${width} px`);
      await editor.getByRole('button', { name: 'Save policy' }).click();
      // A new period counts from zero (docs/api.md, "Spending policies"): the day's spending is not carried into the week.
      await row.getByText('$0.00 of $0.10 a week').waitFor();
      expect((await user.api('/v1/api-keys')).body.find((k: { name: string }) => k.name === name)).toMatchObject({ limit_usd: 0.1, limit_period: 'week' });

      // The connected app: its daily limit from the consent page, then a monthly one.
      const app = page.getByRole('listitem').filter({ hasText: 'Assistant' });
      await app.getByText(/of \$2\.50 a (day|month)/).waitFor();
      await page.getByRole('button', { name: 'Edit spending policy of Assistant' }).click();
      const appEditor = page.getByRole('form', { name: 'Spending policy of Assistant' });
      await appEditor.getByLabel('Period').selectOption('month');
      await appEditor.getByRole('button', { name: 'Save policy' }).click();
      await app.getByText('$0.00 of $2.50 a month').waitFor();
      await check(`/credentials after editing at ${width} px`);
    });
  }
});
