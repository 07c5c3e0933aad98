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

/** True when the built dashboard has the confirmation threshold editor, else it is rebuilt. */
function builtWithThresholds(dist: string): boolean {
  const assets = join(dist, 'assets');
  if (!existsSync(join(dist, 'index.html')) || !existsSync(assets)) return false;
  return readdirSync(assets).some((f) => f.endsWith('.js') && readFileSync(join(assets, f), 'utf8').includes('Save confirmations'));
}

/**
 * A connected app's confirmation threshold on the Credentials page, in
 * Chromium at desktop and phone width (docs/oauth.md, "Calls the user
 * confirms"): the list says which calls ask first, the Confirmations editor
 * changes it through the API (session cookie and CSRF header), a bad value
 * shows the gateway's message and changes nothing; nothing scrolls sideways
 * and nothing logs an error.
 */
describe("a connected app's confirmation threshold on the Credentials page", () => {
  let h: Harness;
  let user: TestUser;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;
  let problems: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get update && apt-get install -y chromium`);
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (!builtWithThresholds(dist))
      execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    h = await startHarness('pglite');
    user = await h.user();
    await rawClient(h.url, { client_name: 'Assistant' }).then((c) => c.authorize(user, { dailyLimitUsd: '2.5' }));
    let context: Awaited<ReturnType<typeof launchChromium>>['context'];
    ({ context, page, close: closeBrowser } = await launchChromium(h.url));
    await context.addCookies(user.cookie.split('; ').map((c) => ({ name: c.slice(0, c.indexOf('=')), value: c.slice(c.indexOf('=') + 1), url: h.url })));
    page.on('console', (m) => {
      // The refused save is a 400 the browser logs as a failed resource; that one is expected.
      if (m.type() === 'error' && !m.text().includes('status of 400')) problems.push(`console error: ${m.text()}`);
    });
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

  const threshold = async () => {
    const [c] = (await user.api('/v1/oauth/connections')).body as Array<Record<string, unknown>>;
    return { above: c!.confirm_above_usd, pct: c!.confirm_below_left_percent };
  };

  for (const [width, above, pct, shown] of [
    [1280, '0.5', '0', 'Asks you first: calls above $0.50'],
    [390, '', '25', 'Asks you first: calls that would leave under 25 % of its limit'],
  ] as const) {
    it(`shows the threshold and changes it; a bad value is refused with the gateway's message (${width} px)`, async () => {
      problems = [];
      await page.setViewportSize({ width, height: 844 });
      await page.goto('/credentials');
      await page.getByRole('heading', { level: 1, name: 'Credentials' }).waitFor();
      const app = page.getByRole('listitem').filter({ hasText: 'Assistant' });
      await app.getByTestId('threshold').waitFor();
      const before = await threshold();
      if (width === 1280) {
        expect(before).toEqual({ above: 0.1, pct: 10 });
        await app.getByText('Asks you first: calls above $0.10, and calls that would leave under 10 % of its limit').waitFor();
      }
      await check(`/credentials at ${width} px`);

      await page.getByRole('button', { name: 'Edit confirmations of Assistant' }).click();
      const editor = page.getByRole('form', { name: 'Confirmations of Assistant' });
      await editor.getByLabel('Priced above (USD)').fill('lots');
      await editor.getByRole('button', { name: 'Save confirmations' }).click();
      await editor.getByText('confirm_above_usd must be a USD amount such as 0.10, or empty for no threshold').waitFor();
      expect(await threshold()).toEqual(before);
      await check(`/credentials with a refused threshold at ${width} px`);

      await editor.getByLabel('Priced above (USD)').fill(above);
      await editor.getByLabel('Leaving under (% of the limit)').fill(pct);
      await editor.getByRole('button', { name: 'Save confirmations' }).click();
      await app.getByTestId('threshold').getByText(shown).waitFor();
      expect(await threshold()).toEqual({ above: above === '' ? null : Number(above), pct: Number(pct) });
      await check(`/credentials after saving at ${width} px`);
    });
  }
});
