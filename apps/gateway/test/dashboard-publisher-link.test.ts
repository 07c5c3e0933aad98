import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dashboardDir } from '../src/index.js';
import { CHROMIUM, launchChromium } from './chromium-kit.js';
import { startStack, type KitUser, type Stack } from './settlement-kit.js';

const here = dirname(fileURLToPath(import.meta.url));

/** True when the built dashboard has the linked keys card, else it is rebuilt. */
function builtWithLinks(dist: string): boolean {
  const assets = join(dist, 'assets');
  if (!existsSync(join(dist, 'index.html')) || !existsSync(assets)) return false;
  return readdirSync(assets).some((f) => f.endsWith('.js') && readFileSync(join(assets, f), 'utf8').includes('linked-owners'));
}

// Issue 50: the Publisher page links a service registered with its own key (the provider SDK's .farebox/keypair):
// the key signs the gateway's challenge in the browser, the overview then counts its calls, and Settle now pays
// the key's wallet its net.
let s: Stack;
let pub: KitUser;
let svc: { owner: string; secret: string };
let page: Page;
let closeBrowser: (() => Promise<void>) | undefined;
const problems: string[] = [];
const name = `dash-link-${process.pid % 100000}`;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get update && apt-get install -y chromium`);
  const dist = dashboardDir();
  if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
  if (!builtWithLinks(dist)) execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(here, '..', '..', '..'), stdio: 'inherit' });
  s = await startStack();
  pub = await s.user();
  expect((await pub.api('/v1/publisher/activate', { body: { name: 'Key Owner' } })).status).toBe(200);
  svc = await s.publish(name, '0.002');
  const caller = await s.user({ topup: 5 });
  for (let i = 0; i < 2; i++) expect((await caller.api('/v1/call', { body: { service: name, payload: { i } } })).status).toBe(200);
  let context: Awaited<ReturnType<typeof launchChromium>>['context'];
  ({ context, page, close: closeBrowser } = await launchChromium(s.url));
  await context.addCookies(pub.cookie.split('; ').map((c) => ({ name: c.slice(0, c.indexOf('=')), value: c.slice(c.indexOf('=') + 1), url: s.url })));
  page.on('console', (m) => void (m.type() === 'error' && problems.push(`console error: ${m.text()}`)));
  page.on('pageerror', (err) => void problems.push(`page error: ${err.message}`));
}, 240_000);

afterAll(async () => {
  await closeBrowser?.();
  await s?.close();
});

it('links the key with its secret signed in the browser; the overview counts its calls; Settle now pays the key 95 %', async () => {
  await page.goto('/publisher');
  await page.getByRole('heading', { name: 'Services published with their own key' }).waitFor();
  expect((await page.getByTestId('earned').textContent())?.trim()).toBe('$0.00');
  const secretField = page.getByLabel('Owner key (secret seed, signed here, never sent)');
  await secretField.fill('SNOTASEED');
  await page.getByRole('button', { name: 'Link key' }).click();
  expect((await page.getByRole('alert').textContent())?.trim()).toBe('Owner key: paste the secret seed (S..., the content of .farebox/keypair)');
  await secretField.fill(svc.secret);
  await page.getByRole('button', { name: 'Link key' }).click();
  await page.getByText(`Linked ${svc.owner} (${name}).`).waitFor({ timeout: 20_000 });
  expect(await secretField.inputValue()).toBe('');
  expect((await page.getByTestId('linked-owners').textContent())?.trim()).toBe(`${svc.owner}: ${name}`);
  await page.getByTestId('earned').getByText('$0.0038').waitFor();

  const before = await s.usdc(svc.owner);
  await page.getByRole('button', { name: 'Settle now' }).click();
  await page.getByText('Paid out 1 cycle now.').waitFor({ timeout: 30_000 });
  expect(await s.usdc(svc.owner)).toBe(before + 38_000n);
  await page.getByRole('row').filter({ hasText: 'done' }).first().waitFor();
  // On a phone the linked key (56 characters) wraps: nothing scrolls sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  const layout = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    // What widens it: an element whose content is wider than its box and not clipped.
    wide: Array.from(document.querySelectorAll('body *'))
      .filter((e) => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflow === 'visible' && e.tagName !== 'text')
      .map((e) => `${e.tagName} ${(e.textContent ?? '').slice(0, 60)}`),
  }));
  expect(layout.scrollWidth, layout.wide.join('; ')).toBeLessThanOrEqual(layout.innerWidth);
  expect(problems).toEqual([]);
}, 120_000);
