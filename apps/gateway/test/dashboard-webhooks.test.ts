import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verifyWebhook } from '@farebox/provider';
import { eventually } from '@farebox/test-kit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardDir } from '../src/index.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { startReceiver, type WebhookReceiver } from '@farebox/test-kit';

const here = dirname(fileURLToPath(import.meta.url));

/** True when the built dashboard has the Webhooks page, else it is rebuilt. */
function builtWithWebhooks(dist: string): boolean {
  const assets = join(dist, 'assets');
  if (!existsSync(join(dist, 'index.html')) || !existsSync(assets)) return false;
  return readdirSync(assets).some((f) => f.endsWith('.js') && readFileSync(join(assets, f), 'utf8').includes('hook-secret-title'));
}

/**
 * The Webhooks page in Chromium at desktop and phone width: an endpoint added
 * with its events, its secret shown once (and it verifies what the receiver
 * gets), a ping in the delivery log, a redelivery, a rotated secret, the
 * endpoint deleted; nothing scrolls sideways and nothing logs an error.
 */
describe('the Webhooks page', () => {
  let h: Harness;
  let user: TestUser;
  let page: Page;
  let receiver: WebhookReceiver;
  let closeBrowser: (() => Promise<void>) | undefined;
  let problems: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get update && apt-get install -y chromium`);
    const dist = dashboardDir();
    if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
    if (!builtWithWebhooks(dist))
      execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
    h = await startHarness('pglite');
    user = await h.user();
    receiver = await startReceiver();
    let context: Awaited<ReturnType<typeof launchChromium>>['context'];
    ({ context, page, close: closeBrowser } = await launchChromium(h.url));
    await context.addCookies(user.cookie.split('; ').map((c) => ({ name: c.slice(0, c.indexOf('=')), value: c.slice(c.indexOf('=') + 1), url: h.url })));
    page.on('console', (m) => void (m.type() === 'error' && problems.push(`console error: ${m.text()}`)));
    page.on('pageerror', (err) => void problems.push(`page error: ${err.message}`));
    page.on('dialog', (d) => void d.accept());
  }, 180_000);

  afterAll(async () => {
    await closeBrowser?.();
    await receiver?.close();
    await h?.close();
  });

  async function check(label: string) {
    const layout = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
    expect(layout.scrollWidth, `${label} scrolls sideways`).toBeLessThanOrEqual(layout.innerWidth);
    expect(problems, label).toEqual([]);
  }

  for (const width of [1280, 390] as const) {
    it(`adds an endpoint, shows its secret once, pings it, redelivers, rotates and deletes it (${width} px)`, async () => {
      problems = [];
      receiver.received.length = 0;
      await page.setViewportSize({ width, height: 844 });
      await page.goto('/webhooks');
      await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
      await page.getByText('No webhook endpoints yet.').waitFor();
      const url = `${receiver.url}?w=${width}`;
      await page.getByLabel('Endpoint URL').fill(url);
      await page.getByLabel(/A key or app used 80 %/).check();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = (await page.getByTestId('hook-secret').textContent())!.trim();
      expect(secret).toMatch(/^whsec_/);
      const hook = page.getByTestId('hook').filter({ hasText: url });
      await hook.getByText('topup.completed, budget.threshold_reached').waitFor();
      await check(`/webhooks with a new endpoint at ${width} px`);
      expect((await user.api('/v1/webhooks')).body).toEqual([expect.objectContaining({ url, events: ['topup.completed', 'budget.threshold_reached'] })]);

      // A bad URL is refused with the gateway's reason, and nothing is added.
      await page.getByLabel('Endpoint URL').fill('https://10.0.0.1/hooks');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByRole('alert').getByText('url resolves to a private or reserved address').waitFor();
      expect((await user.api('/v1/webhooks')).body).toHaveLength(1);
      // The browser logs the refused request (400) itself: that one is expected.
      problems = problems.filter((p) => !p.includes('status of 400'));

      await page.getByRole('button', { name: `Send a test event to ${url}` }).click();
      const ping = await eventually('the ping arrives', () => receiver.received[0]);
      expect((await verifyWebhook({ payload: ping.body, signature: ping.headers['farebox-signature'] as string, secret })).ok).toBe(true);
      const rows = hook.getByTestId('delivery');
      await eventually('the log shows it delivered', async () => {
        await hook.getByRole('button', { name: 'Refresh' }).click();
        return (await rows.first().textContent())?.includes('delivered');
      });
      await expect(rows.first().textContent()).resolves.toContain('answered 200');
      await check(`/webhooks with the delivery log at ${width} px`);

      await hook
        .getByRole('button', { name: /^Send webhook\.ping evt_/ })
        .first()
        .click();
      await eventually('the redelivery arrives', () => receiver.received.length === 2);
      expect(receiver.received[1]!.body).toBe(ping.body);

      await page.getByRole('button', { name: `Rotate the secret of ${url}` }).click();
      await page.getByText('New signing secret').waitFor();
      const next = (await page.getByTestId('hook-secret').textContent())!.trim();
      expect(next).not.toBe(secret);
      await hook.getByText(`secret ${next.slice(0, 10)}…`).waitFor();

      await page.getByRole('button', { name: `Delete the webhook ${url}` }).click();
      await page.getByText('No webhook endpoints yet.').waitFor();
      expect((await user.api('/v1/webhooks')).body).toEqual([]);
      await check(`/webhooks after deleting at ${width} px`);
    });
  }
});
