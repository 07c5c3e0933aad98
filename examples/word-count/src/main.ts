import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@farebox/protocol';
import { ensureKeypairFile } from '@farebox/provider';
import { createWordCountService } from './service.js';

const env = { ...process.env };
if (!env.AGENT_WALLET_SECRET && !env.KEYPAIR_PATH) {
  // A local demo key, kept out of git (.farebox/ is ignored).
  env.KEYPAIR_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', '.farebox', 'keypair');
  const { publicKey, created } = ensureKeypairFile(env.KEYPAIR_PATH);
  if (created) console.log(`created a local owner key ${publicKey} in ${env.KEYPAIR_PATH}`);
}

try {
  const service = createWordCountService(env);
  const { url } = await service.listen(Number(env.PORT ?? 4102));
  console.log(`word-count listening on ${url}/ (manifest: ${url}/manifest)`);
  console.log(`owner ${service.config.ownerWallet}, ${service.config.pricingNote}`);
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(`word-count cannot start:\n - ${e.problems.join('\n - ')}`);
    process.exitCode = 1;
  } else {
    throw e;
  }
}
