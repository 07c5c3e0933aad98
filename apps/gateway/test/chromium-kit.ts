import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's Chromium (the `chromium` package), driven by playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Chromium on a new empty profile, at 1280 x 900, with relative URLs
 * resolved against `baseURL`, and the flags this machine's closed network
 * needs (no background connections, no QUIC). `close()` ends the browser and
 * removes its profile.
 */
export async function launchChromium(baseURL: string): Promise<{ context: BrowserContext; page: Page; close(): Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'farebox-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
    baseURL,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
