// A real local stack for the adapter and CLI tests: the gateway with its
// embedded devnet (instant ledger), a provider-SDK service registered on the
// devnet registry, users signed up through the real API, and a "browser" that
// signs in and consents on the gateway's /authorize page.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { startGateway, type RunningGateway } from '@farebox/gateway';
import { createProvider } from '@farebox/provider';
import { createAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { parseAmount } from '@farebox/protocol';

export interface StackUser {
  email: string;
  password: string;
  key: string;
  cookie: string;
  csrf: string;
  api(path: string, init?: { method?: string; body?: unknown }): Promise<{ status: number; body: any }>;
}

export interface Stack {
  gw: RunningGateway;
  url: string;
  user(): Promise<StackUser>;
  /** Registers a provider-SDK service owned by its own funded keypair; it also accepts direct escrow payments. */
  publish(name: string, price: string): Promise<{ endpoint: string; owner: string }>;
  /** Runs a provider-SDK service owned by `ownerWallet` without registering it (a publisher registers it). */
  serve(name: string, price: string, ownerWallet: string): Promise<{ endpoint: string }>;
  close(): Promise<void>;
}

/** Registers `down`, 0.001 USD a call, whose endpoint refuses connections (every call fails and is refunded). */
export async function publishDownService(h: Stack): Promise<void> {
  const kp = Keypair.random();
  await h.gw.devnet!.friendbot(kp.publicKey());
  await createRegistryClient(h.gw.core.network).register(keypairSigner(kp.secret()), {
    service: 'down',
    pricePerCall: parseAmount('0.001'),
    endpoint: 'http://127.0.0.1:9/',
    description: 'a service that is down',
  });
  await h.gw.core.mirror.syncOnce();
}

let counter = 0;

export async function startStack(): Promise<Stack> {
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-mcp-gw-'));
  const gw = await startGateway({
    port: 0,
    network: 'local',
    // The test services listen on 127.0.0.1.
    allowLoopbackEndpoints: true,
    // Warnings and errors only: the tests read their answers, not the access log.
    logLevel: 'warn',
    dataDir,
    devnetCloseIntervalMs: 'instant',
    devnetInMemory: true,
    callTimeoutMs: 5000,
    rateLimits: { authPerMinute: 1000 },
    env: {},
  });
  const registry = createRegistryClient(gw.core.network);
  const closers: Array<() => Promise<void>> = [];

  async function request(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const res = await fetch(`${gw.url}${path}`, {
      method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
      headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      redirect: 'manual',
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: body as any, headers: res.headers };
  }

  return {
    gw,
    url: gw.url,
    async user() {
      const email = `u${Date.now()}_${counter++}@example.com`;
      const password = 'correct horse battery';
      const signup = await request('/auth/signup', { body: { email, password } });
      if (signup.status !== 201) throw new Error(`signup failed: ${signup.status} ${JSON.stringify(signup.body)}`);
      const cookie = (signup.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
      const csrf = signup.body.csrf_token as string;
      const created = await request('/v1/api-keys', { body: { name: 'test' }, headers: { cookie, 'x-csrf-token': csrf } });
      if (created.status !== 201) throw new Error(`key creation failed: ${created.status}`);
      const key = created.body.key as string;
      return { email, password, key, cookie, csrf, api: (path, init = {}) => request(path, { ...init, headers: { authorization: `Bearer ${key}` } }) };
    },
    async publish(name, price) {
      const kp = Keypair.random();
      await gw.devnet!.friendbot(kp.publicKey());
      // The USDC trustline lets the owner receive escrow releases (direct calls).
      await createAccounts(gw.core.network).ensureUsdcTrustline(keypairSigner(kp.secret()));
      const treasury = ((await request('/v1/platform/key')).body as { treasury: string }).treasury;
      const provider = createProvider({
        service: name,
        pricePerCall: price,
        description: `test service ${name}: echoes its payload`,
        network: 'local',
        platform: { publicKey: gw.core.platformPublicKey },
        wallet: { secret: kp.secret() },
        registry,
        trustlessWork: { apiKey: 'provider-escrow-key', platformAddress: treasury, baseUrl: `${gw.devnet!.url}/escrow` },
        servedStorePath: join(dataDir, `served-${name}.json`),
        env: {},
      }).serve((payload) => ({ echo: payload }));
      const listening = await provider.listen(0, '127.0.0.1');
      const endpoint = `${listening.url}/`;
      await registry.register(keypairSigner(kp.secret()), {
        service: name,
        pricePerCall: parseAmount(price),
        endpoint,
        description: `test service ${name}: echoes its payload`,
      });
      await gw.core.mirror.syncOnce();
      closers.push(() => provider.close());
      return { endpoint, owner: kp.publicKey() };
    },
    async serve(name, price, ownerWallet) {
      const provider = createProvider({
        service: name,
        pricePerCall: price,
        description: `publisher service ${name}`,
        network: 'local',
        platform: { publicKey: gw.core.platformPublicKey },
        ownerWallet,
        registry,
        env: {},
      }).serve((payload) => ({ echo: payload }));
      const listening = await provider.listen(0, '127.0.0.1');
      closers.push(() => provider.close());
      return { endpoint: `${listening.url}/` };
    },
    async close() {
      for (const c of closers) await c().catch(() => undefined);
      await gw.close();
    },
  };
}

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/**
 * Plays the browser: opens the sign-in URL with the user's session cookie,
 * submits the consent form (Allow), then follows the redirect to the client's
 * loopback callback. Returns the callback page's status and text.
 */
export async function browserSignIn(
  base: string,
  authorizeUrl: string,
  user: Pick<StackUser, 'cookie'>,
): Promise<{ callbackStatus: number; callbackText: string; consentHtml: string }> {
  const res = await fetch(authorizeUrl, { headers: { cookie: user.cookie }, redirect: 'manual' });
  const html = await res.text();
  if (res.status !== 200) throw new Error(`authorize page answered ${res.status}: ${html.slice(0, 300)}`);
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[unescapeHtml(m[1]!)] = unescapeHtml(m[2]!);
  fields.decision = 'allow';
  fields.daily_limit_usd = '';
  const post = await fetch(`${base}/authorize`, {
    method: 'POST',
    headers: { cookie: user.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
  if (post.status !== 303) throw new Error(`consent post answered ${post.status}: ${(await post.text()).slice(0, 300)}`);
  const callback = await fetch(post.headers.get('location')!);
  return { callbackStatus: callback.status, callbackText: await callback.text(), consentHtml: html };
}
