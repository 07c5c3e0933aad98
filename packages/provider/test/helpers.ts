import { startDevnet, type Devnet } from '@farebox/devnet';
import { createCertificateSigner, encodeStrKey, randomBytes, signCallCertificate } from '@farebox/protocol';
import { afterAll, beforeAll } from 'vitest';
import { createProvider, publicKeyFromSecret, type Provider, type ProviderOptions } from '../src/index.js';

export function newSecret(): string {
  return encodeStrKey('secretSeed', randomBytes(32));
}

export async function newSigner() {
  return createCertificateSigner(newSecret());
}

export type Signer = Awaited<ReturnType<typeof newSigner>>;

export const ownerSecret = newSecret();
export const ownerWallet = publicKeyFromSecret(ownerSecret);

/** The in-process devnet of the current test file (see {@link useDevnet}). */
export const chain: { devnet?: Devnet } = {};

/**
 * Starts an in-process devnet for this test file (instant ledgers, ephemeral
 * port); providers made with {@link baseOptions} reach it through
 * FAREBOX_DEVNET_URL. With `registerEcho`, "echo" is bootstrapped for the
 * shared owner key, so platform-signed calls pass the registry check.
 */
export function useDevnet({ registerEcho = true }: { registerEcho?: boolean } = {}): void {
  beforeAll(async () => {
    chain.devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
    if (registerEcho) await createProvider(baseOptions(await newSigner(), { endpoint: 'http://127.0.0.1:9/' })).bootstrap();
  });
  afterAll(async () => {
    await chain.devnet?.close();
    delete chain.devnet;
  });
}

/** Options for a local provider that accepts platform-signed calls from `platform`. */
export function baseOptions(platform: Signer, extra: Partial<ProviderOptions> = {}): ProviderOptions {
  return {
    service: 'echo',
    pricePerCall: '0.001',
    description: 'Echoes the JSON payload back.',
    network: 'local',
    platform: { publicKey: platform.publicKey },
    wallet: { secret: ownerSecret },
    env: chain.devnet ? { FAREBOX_DEVNET_URL: chain.devnet.url } : {},
    ...extra,
  };
}

export async function startProvider(options: ProviderOptions, handler: Parameters<Provider['serve']>[0] = (payload) => ({ echo: payload })) {
  const provider = createProvider(options).serve(handler);
  const listening = await provider.listen(0, '127.0.0.1');
  return { provider, url: `${listening.url}${provider.config.endpointPath === '/' ? '/' : provider.config.endpointPath}`, base: listening.url };
}

export async function certificateFor(
  signer: Signer,
  body: string,
  overrides: { service?: string; amount?: bigint; now?: number; ttlSeconds?: number } = {},
): Promise<string> {
  const { header } = await signCallCertificate(
    {
      service: overrides.service ?? 'echo',
      body,
      amount: overrides.amount ?? 10_000n,
      callId: `c_${Math.random().toString(36).slice(2)}`,
      ...(overrides.now !== undefined ? { now: overrides.now } : {}),
      ...(overrides.ttlSeconds !== undefined ? { ttlSeconds: overrides.ttlSeconds } : {}),
    },
    signer,
  );
  return header;
}

export async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await res.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : null;
  } catch {
    throw new Error(`not JSON (status ${res.status}): ${text.slice(text.indexOf('<pre>'), text.indexOf('<pre>') + 600)}`);
  }
  return { status: res.status, headers: res.headers, json };
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
