#!/usr/bin/env node
// `farebox-discovery`: one discovery instance (docs/deploy.md, "Discovery backend").
import { ConfigError } from '@farebox/protocol';
import { startDiscovery } from './server.js';

process.umask(0o077);

const log = (message: string, err?: unknown) =>
  console.error(
    JSON.stringify({ level: 'warn', time: new Date().toISOString(), msg: message, ...(err ? { err: err instanceof Error ? err.message : String(err) } : {}) }),
  );

let running;
try {
  // The environment is read once, here (loadDiscoveryConfig, through startDiscovery).
  running = await startDiscovery({ env: process.env, log, waitReady: false });
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  console.error(`farebox-discovery: refusing to start, the configuration is invalid:\n${err.problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(1);
}
const d = running;
console.log(`Farebox discovery ${d.url}`);
console.log(`  health          ${d.url}/health`);
console.log(`  network         ${d.service.network.name} (registry ${d.service.network.registryContractId ?? 'none'})`);
d.service.ready().then(
  async () => {
    const h = await d.service.health();
    console.log(`  ready           ${h.documents} services, ledger ${h.ledger}, ${h.mode}${h.mode_reason ? ` (${h.mode_reason})` : ''}`);
  },
  () => undefined,
);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    d.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
