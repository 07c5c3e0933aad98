#!/usr/bin/env node
// `farebox-gateway`: starts the gateway (PGlite or DATABASE_URL, the embedded
// devnet on the local network) and prints where everything is.
import { startGateway } from './server.js';

const gw = await startGateway();
const key = gw.core.platform.key();
console.log(`Farebox gateway   ${gw.url}`);
console.log(`  health          ${gw.url}/health`);
console.log(`  platform key    ${key.publicKey} (${key.network})`);
if (gw.devnet) console.log(`  devnet          ${gw.devnet.url} (explorer ${gw.devnet.url}/explorer/local)`);
console.log(`  database        ${gw.core.db.kind}`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    gw.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
