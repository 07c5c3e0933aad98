import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@farebox/protocol';
import { ensureKeypairFile } from '@farebox/provider';
import { createEchoService } from './service.js';

const env = { ...process.env };
if (!env.AGENT_WALLET_SECRET && !env.KEYPAIR_PATH) {
  // A local demo key, kept out of git (.farebox/ is ignored).
  env.KEYPAIR_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', '.farebox', 'keypair');
  const { publicKey, created } = ensureKeypairFile(env.KEYPAIR_PATH);
  if (created) console.log(`created a local owner key ${publicKey} in ${env.KEYPAIR_PATH}`);
}

try {
  const service = createEchoService(env);
  const { url } = await service.listen(Number(env.PORT ?? 4101));
  console.log(`echo listening on ${url}/ (manifest: ${url}/manifest)`);
  console.log(`owner ${service.config.ownerWallet}, price ${service.manifest().pricePerCall} USDC per call`);
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(`echo cannot start:\n - ${e.problems.join('\n - ')}`);
    process.exitCode = 1;
  } else {
    throw e;
  }
}
