import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardDir } from '../src/index.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';
import { startHarness, type Harness, type TestUser } from './harness.js';

const here = dirname(fileURLToPath(import.meta.url));

/** Whether the dashboard's build is older than a source of its app (it is rebuilt then). */
function staleBuild(dist: string): boolean {
  const built = join(dist, 'index.html');
  if (!existsSync(built)) return true;
  const app = join(here, '..', '..', 'dashboard', 'app');
  const newest = (dir: string): number =>
    Math.max(...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs)));
  return newest(app) > statSync(built).mtimeMs;
}

/**
 * The dashboard's call button when the gateway's answer is lost on the way
 * back (the browser's connection reset after the gateway answered, by
 * Playwright's routing): the client asks once more under the same
 * Idempotency-Key; when that answer is lost too the page says the gateway
 * cannot be reached, and the next press asks under the same key again, so
 * the call is charged once.
 */
describe('the dashboard call button after a lost answer', () => {
  let h: Harness;
  let user: TestUser;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get update && apt-get install -y chromium`);
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (staleBuild(dist)) execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    h = await startHarness('pglite');
    await h.publish('echo', { price: '0.01' });
    user = await h.user();
    let context: Awaited<ReturnType<typeof launchChromium>>['context'];
    ({ context, page, close: closeBrowser } = await launchChromium(h.url));
    await context.addCookies(user.cookie.split('; ').map((c) => ({ name: c.slice(0, c.indexOf('=')), value: c.slice(c.indexOf('=') + 1), url: h.url })));
  }, 180_000);

  afterAll(async () => {
    // A route handler still passing on the last answer when the test ends must not outlive the browser.
    await page?.unrouteAll({ behavior: 'ignoreErrors' });
    await closeBrowser?.();
    await h?.close();
  });

  it('a press after an unanswered call asks under the same key and is charged once; the press after an answer is a new call', async () => {
    const credits = async () => (await user.api('/v1/balance')).body.balance_base_units as number;
    const keys: string[] = [];
    let lose = 0;
    await page.route('**/v1/call', async (route) => {
      keys.push(route.request().headers()['idempotency-key'] ?? '');
      // The gateway gets the call and answers; the answer is lost, or passed on.
      const response = await route.fetch();
      if (lose > 0) {
        lose--;
        await route.abort('connectionreset');
        return;
      }
      await route.fulfill({ response });
    });
    await page.goto('/catalog/echo');
    await page.getByRole('heading', { level: 1, name: 'echo' }).waitFor();
    await page.getByLabel('Payload (JSON object)').fill('{ "text": "lost once" }');
    const before = await credits();

    // The client's own retry is lost too: the page has no answer to show.
    lose = 2;
    await page.getByRole('button', { name: 'Call echo' }).click();
    await page.getByRole('alert').getByText('the gateway cannot be reached').waitFor({ timeout: 20_000 });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(await credits()).toBe(before - 100_000);

    // Pressed again: the same key, so the gateway answers the first call, charged once.
    await page.getByRole('button', { name: 'Call echo' }).click();
    await page.getByTestId('call-result').waitFor({ timeout: 20_000 });
    expect(JSON.parse((await page.getByTestId('call-result').innerText()).trim())).toEqual({ echo: { text: 'lost once' } });
    expect(keys).toHaveLength(3);
    expect(keys[2]).toBe(keys[0]);
    expect(await credits()).toBe(before - 100_000);

    // Answered: the next press is a new call with a new key.
    await page.getByRole('button', { name: 'Call echo' }).click();
    await expect.poll(() => keys.length, { timeout: 20_000 }).toBe(4);
    await expect.poll(credits, { timeout: 20_000 }).toBe(before - 200_000);
    expect(keys[3]).not.toBe(keys[0]);
  });
});
