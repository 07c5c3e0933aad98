import { join } from 'node:path';
import { ConfigError } from '@farebox/protocol';
import { prepareLocalEnv } from '@farebox/provider';
import { createWordCountService } from './service.js';

// Next to the local gateway: its devnet, a demo owner key kept out of git
// (.farebox/ is ignored) and the platform key of the calls it signs.
const env = await prepareLocalEnv(process.env, { keypairPath: join(import.meta.dirname, '..', '.farebox', 'keypair') });

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
