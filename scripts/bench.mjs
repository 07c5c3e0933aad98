#!/usr/bin/env node
// `pnpm bench`: every benchmark, one after the other, each printing its own
// medians and ratios. `pnpm bench <name>` runs one (provider, devnet, ledger,
// search, discovery, gateway, breakdown, settlement, faults, x402, mpp).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const benches = {
  provider: ['packages/provider/bench/verify.ts'],
  devnet: ['packages/devnet/bench/devnet.ts'],
  ledger: ['packages/ledger/bench/ledger.ts'],
  search: ['--expose-gc', 'packages/discovery/bench/search.ts'],
  discovery: ['apps/discovery/bench/discovery.ts'],
  gateway: ['apps/gateway/bench/calls.ts'],
  breakdown: ['apps/gateway/bench/breakdown.ts'],
  settlement: ['apps/gateway/bench/settlement.ts'],
  faults: ['apps/gateway/bench/faults.ts'],
  x402: ['apps/gateway/bench/x402.ts'],
  mpp: ['apps/gateway/bench/mpp.ts'],
};
const only = process.argv.slice(2);
let failed = 0;
for (const [name, args] of Object.entries(benches)) {
  if (only.length && !only.includes(name)) continue;
  const file = args.at(-1);
  if (!existsSync(join(root, file))) {
    console.log(`\n=== ${name}: ${file} missing, skipped`);
    continue;
  }
  console.log(`\n=== ${name} (${file})`);
  const r = spawnSync(process.execPath, ['--conditions=@farebox/source', '--import', 'tsx', ...args], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
