import { existsSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';
import { pkce, rawClient } from './oauth-browser.js';
import { eventually } from '@farebox/test-kit';

const PASSWORD = 'correct horse battery';
/** A client name that tries to pass for a verified one and, with an unterminated RIGHT-TO-LEFT OVERRIDE, to turn the page's warning around. */
const DECEIVING = 'Claude (Anthropic) \u2713 verified\u202e...';
const WARNING = '(name given by the app, not verified)';

/**
 * Where Chromium lays out each visible character of the text node holding
 * `needle` (inside `selector`), in the text's logical order. A run laid out
 * right to left has its characters' x positions falling along a line.
 */
async function layout(page: Page, selector: string, needle: string): Promise<Array<{ ch: string; x: number; y: number }>> {
  return page.evaluate(
    ([sel, want]) => {
      for (const el of Array.from(document.querySelectorAll(sel))) {
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const text = node.textContent ?? '';
          const at = text.indexOf(want);
          if (at < 0) continue;
          const out: Array<{ ch: string; x: number; y: number }> = [];
          for (let i = at; i < at + want.length; i++) {
            if (text[i] === ' ') continue;
            const r = document.createRange();
            r.setStart(node, i);
            r.setEnd(node, i + 1);
            const b = r.getBoundingClientRect();
            out.push({ ch: text[i]!, x: b.left, y: Math.round(b.top) });
          }
          return out;
        }
      }
      throw new Error(`no text ${JSON.stringify(want)} in ${sel}`);
    },
    [selector, needle] as const,
  );
}

/** Every pair of neighbouring characters on one line reads left to right: the text is not reversed. */
function readsLeftToRight(boxes: Array<{ ch: string; x: number; y: number }>): string[] {
  const reversed: string[] = [];
  for (let i = 1; i < boxes.length; i++) {
    const [a, b] = [boxes[i - 1]!, boxes[i]!];
    if (a.y === b.y && b.x <= a.x) reversed.push(`${a.ch}${b.ch} at x ${a.x} -> ${b.x}`);
  }
  return reversed;
}

/** The consent screen in Debian's Chromium against a real gateway: what an app's name can and cannot do to it. */
describe('the consent page shows the name an app gives, and cannot be turned around by it', () => {
  let h: Harness;
  let context: BrowserContext;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium is missing at ${CHROMIUM}: the browser tests need Debian's Chromium. Install it with: apt-get update && apt-get install -y chromium chromium-driver`,
      );
    }
    h = await startHarness('pglite');
    ({ context, page, close: closeBrowser } = await launchChromium(h.url));
    page.on('pageerror', (err) => console.error('page error:', err));
  }, 180_000);

  afterAll(async () => {
    await closeBrowser?.();
    await h?.close();
  });

  it('strips the bidi override from the name, isolates the name, and keeps the "not verified" warning outside it, reading left to right', async () => {
    const user = await h.user();
    const client = await rawClient(h.url, { client_name: DECEIVING });
    const p = pkce();
    const authorize = client.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' });

    // Signed out: the sign-in page names the app the same way.
    await page.goto(authorize.toString());
    await page.getByRole('heading', { level: 1, name: 'Sign in to Farebox' }).waitFor();
    expect(readsLeftToRight(await layout(page, 'p', 'wants to connect to your Farebox account'))).toEqual([]);
    expect(readsLeftToRight(await layout(page, 'p', WARNING))).toEqual([]);
    expect(await page.locator('p > strong > bdi').first().textContent()).toBe('Claude (Anthropic) \u2713 verified...');

    await page.locator('#in-email').fill(user.email);
    await page.locator('#in-password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();

    // The page's own words read left to right as written, whatever the name before them.
    expect(readsLeftToRight(await layout(page, 'p', WARNING))).toEqual([]);
    expect(readsLeftToRight(await layout(page, 'p', 'asks to use the account'))).toEqual([]);
    expect(readsLeftToRight(await layout(page, 'h1', 'to Farebox?'))).toEqual([]);

    // The name as shown: what the app gave, without U+202E, in an isolating element.
    const html = await page.content();
    expect(html).not.toContain('\u202e');
    const names = await page.locator('bdi').allTextContents();
    expect(names.slice(0, 2)).toEqual(['Claude (Anthropic) \u2713 verified...', 'Claude (Anthropic) \u2713 verified...']);
    expect(await page.locator('h1 bdi').count()).toBe(1);
    expect(
      await page
        .locator('p > strong > bdi')
        .first()
        .evaluate((el) => getComputedStyle(el).unicodeBidi),
    ).toBe('isolate');

    // The warning is the page's, outside the app's text, and reads left to right as written.
    const warning = page.locator('span.muted', { hasText: 'name given by the app' });
    expect(await warning.textContent()).toBe(WARNING);
    expect(await warning.evaluate((el) => el.closest('bdi') === null && el.closest('strong') === null)).toBe(true);
    expect(await page.locator('bdi span, bdi .muted').count()).toBe(0);
    // The warning comes after the name on the page, not before it.
    const nameBox = (await page.locator('p > strong > bdi').first().boundingBox())!;
    const warningBox = (await warning.boundingBox())!;
    expect(warningBox.y > nameBox.y + 1 || warningBox.x >= nameBox.x + nameBox.width - 1).toBe(true);

    // The visible paragraph, as the user reads it.
    const paragraph = (await page.locator('p', { hasText: 'asks to use the account' }).innerText()).trim();
    expect(paragraph).toBe(`Claude (Anthropic) \u2713 verified... ${WARNING} asks to use the account ${user.email}. It will be able to:`);

    // The connection the user makes is listed under the same shown name.
    await page.getByRole('button', { name: 'Allow' }).click();
    const listed = async () =>
      ((await user.api('/v1/oauth/connections')).body as Array<{ client_id: string; client_name: string }>).find((c) => c.client_id === client.client.client_id)
        ?.client_name;
    expect(await eventually('the connection is listed', listed)).toBe('Claude (Anthropic) \u2713 verified...');
  }, 120_000);

  it("shows and sets the connection's whole spending policy; bad input answers PATCH's message, keeps what was typed and grants nothing", async () => {
    const user = await h.user();
    await context.clearCookies();
    const client = await rawClient(h.url, { client_name: 'Budget app' });
    const p = pkce();
    const authorize = client.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' }).toString();
    await page.goto(authorize);
    await page.locator('#in-email').fill(user.email);
    await page.locator('#in-password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    const shown = async () => ({
      limit: await page.locator('#limit').inputValue(),
      period: await page.locator('#period').inputValue(),
      services: await page.locator('#services').inputValue(),
      maxCall: await page.locator('#max-call').inputValue(),
      confirm: await page.locator('#confirm').inputValue(),
    });
    // A new connection: nothing set, a limit would be per day, the confirmation threshold's default.
    expect(await shown()).toEqual({ limit: '', period: 'day', services: '', maxCall: '', confirm: '0.1' });
    expect(await page.locator('#period option').allTextContents()).toEqual(['per day (UTC)', 'per week (UTC, from Monday)', 'per month (UTC)', 'in total']);
    const connections = async () =>
      ((await user.api('/v1/oauth/connections')).body as Array<Record<string, any>>).filter((c) => c.client_id === client.client.client_id);

    const submit = async (values: { limit: string; period: string; services: string; maxCall: string }) => {
      await page.locator('#limit').fill(values.limit);
      await page.locator('#period').selectOption(values.period);
      await page.locator('#services').fill(values.services);
      await page.locator('#max-call').fill(values.maxCall);
      await page.getByRole('button', { name: 'Allow' }).click();
    };
    const refusals: Array<{ values: { limit: string; period: string; services: string; maxCall: string }; body: Record<string, unknown> }> = [
      { values: { limit: 'lots', period: 'week', services: '', maxCall: '' }, body: { limit_usd: 'lots', limit_period: 'week' } },
      { values: { limit: '20000', period: 'month', services: '', maxCall: '' }, body: { limit_usd: '20000', limit_period: 'month' } },
      { values: { limit: '2.5', period: 'week', services: 'echo, Bad_Name!', maxCall: '' }, body: { allowed_services: ['echo', 'Bad_Name!'] } },
      { values: { limit: '', period: 'day', services: '', maxCall: '0' }, body: { max_call_usd: '0' } },
    ];
    const messages: string[] = [];
    for (const r of refusals) {
      await submit(r.values);
      const error = page.locator('p.error');
      await error.waitFor();
      messages.push((await error.textContent()) ?? '');
      // What the user typed is still there; nothing was granted.
      expect(await shown()).toEqual({ ...r.values, confirm: '0.1' });
      expect(await connections()).toEqual([]);
    }
    expect(messages.slice(0, 2)).toEqual(['limit_usd must be a USD amount such as 5 or 2.50', 'limit_usd must be more than 0 and at most 10000 USD']);
    expect(messages[3]).toBe('max_call_usd must be more than 0 and at most 10000 USD');

    await submit({ limit: '2.5', period: 'week', services: 'echo, word-count', maxCall: '0.05' });
    const [conn] = await eventually('the connection is listed', async () => ((await connections()).length === 1 ? await connections() : undefined));
    expect(conn).toMatchObject({
      limit_usd: 2.5,
      limit_period: 'week',
      allowed_services: ['echo', 'word-count'],
      max_call_usd: 0.05,
      spent_usd: 0,
      remaining_usd: 2.5,
      confirm_above_usd: 0.1,
    });
    // The page's messages are PATCH /v1/oauth/connections/:id's for the same input, and PATCH changes nothing either.
    for (const [i, r] of refusals.entries()) {
      const res = await fetch(`${h.url}/v1/oauth/connections/${conn!.id}`, {
        method: 'PATCH',
        headers: { cookie: user.cookie, 'x-csrf-token': user.csrf, 'content-type': 'application/json' },
        body: JSON.stringify(r.body),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe(messages[i]);
    }
    expect((await connections())[0]).toMatchObject({ limit_usd: 2.5, limit_period: 'week', allowed_services: ['echo', 'word-count'], max_call_usd: 0.05 });

    // A returning user sees the connection's policy as it is now.
    await page.goto(authorize);
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    expect(await shown()).toEqual({ limit: '2.5', period: 'week', services: 'echo, word-count', maxCall: '0.05', confirm: '0.1' });
  }, 120_000);

  it('shows a name made only of invisible characters as "Unnamed app", still marked as not verified', async () => {
    const user = await h.user();
    await context.clearCookies();
    const client = await rawClient(h.url, { client_name: '\u200b\u202e\u2066\ufeff' });
    const p = pkce();
    await page.goto(client.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' }).toString());
    await page.locator('#in-email').fill(user.email);
    await page.locator('#in-password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    expect(await page.locator('h1').innerText()).toBe('Connect Unnamed app to Farebox?');
    expect(await page.locator('span.muted', { hasText: 'name given by the app' }).textContent()).toBe(WARNING);
  }, 60_000);
});
