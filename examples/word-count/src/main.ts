import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@farebox/protocol';
import { ensureKeypairFile } from '@farebox/provider';
import { createWordCountService } from './service.js';

const env = { ...process.env };
const gateway = (env.FAREBOX_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
// The gateway embeds the local devnet under /devnet.
env.FAREBOX_DEVNET_URL ??= `${gateway}/devnet`;

if (!env.AGENT_WALLET_SECRET && !env.KEYPAIR_PATH) {
  // A local demo key, kept out of git (.farebox/ is ignored).
  env.KEYPAIR_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', '.farebox', 'keypair');
  const { publicKey, created } = ensureKeypairFile(env.KEYPAIR_PATH);
  if (created) console.log(`created a local owner key ${publicKey} in ${env.KEYPAIR_PATH}`);
}

if (!env.FAREBOX_PLATFORM_PUBLIC_KEY) {
  // Accept calls signed by the local gateway: ask it for its key.
  try {
    const res = await fetch(`${gateway}/v1/platform/key`, { signal: AbortSignal.timeout(3000) });
    const { publicKey } = (await res.json()) as { publicKey?: string };
    if (publicKey) env.FAREBOX_PLATFORM_PUBLIC_KEY = publicKey;
  } catch (e) {
    console.error(`cannot read the platform key from ${gateway}/v1/platform/key (${(e as Error).message}): start the gateway or set FAREBOX_PLATFORM_PUBLIC_KEY`);
  }
}

try {
  const service = createWordCountService(env);
  const { url } = await service.listen(Number(env.PORT ?? 4102));
  console.log(`word-count listening on ${url}/ (manifest: ${url}/manifest)`);
  console.log(`owner ${service.config.ownerWallet}, ${service.config.pricingNote}`);
  try {
    // Registers on the devnet (endpoint: PUBLIC_ENDPOINT, or the listening address).
    const result = await service.bootstrap();
    console.log(`registry: ${result.action} "${result.service}" at ${result.endpoint}${result.explorerUrl ? ` (${result.explorerUrl})` : ''}`);
  } catch (e) {
    console.error(`not registered, paid calls get 503 until it is: ${(e as Error).message}`);
  }
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(`word-count cannot start:\n - ${e.problems.join('\n - ')}`);
    process.exitCode = 1;
  } else {
    throw e;
  }
}
