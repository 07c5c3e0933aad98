// Devnet throughput over HTTP: registry reads (get_agent through simulateTransaction)
// and submitted payments (sendTransaction), and how soon a catalog mirror lists a
// new registration. Run: pnpm exec tsx packages/devnet/bench/devnet.ts
import { Account, Asset, BASE_FEE, Keypair, Operation, rpc, TransactionBuilder } from '@stellar/stellar-sdk';
import { createAccounts, createCatalogMirror, createRegistryClient, keypairSigner, MemoryCursorStore } from '@farebox/stellar';
import { resolveNetwork } from '@farebox/stellar';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const READS = 3000;
const TXS = 1500;
const CONCURRENCY = 16;

async function pool(n: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

// The devnet runs in its own process (as `farebox-devnet` would), so client and
// server each get one of the two cores.
const port = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const a = s.address();
    s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
  });
});
const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@farebox/source', cli, '--port', String(port), '--close', 'instant'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise<void>((resolve, reject) => {
  child.stdout!.on('data', (b: Buffer) => b.toString().includes('listening') && resolve());
  child.once('exit', (code) => reject(new Error(`devnet exited with ${code}`)));
});
const net = resolveNetwork({ network: 'local', devnetUrl: `http://127.0.0.1:${port}`, env: {} });
const accounts = createAccounts(net);
const registry = createRegistryClient(net);
const owner = Keypair.random();
await accounts.fund(owner.publicKey());
await registry.register(keypairSigner(owner.secret()), { service: 'bench', pricePerCall: 1000n, endpoint: 'https://bench.test', description: 'bench' });

// Reads (one untimed warm-up round for the JIT on both sides).
await pool(500, async () => void (await registry.getAgent('bench')));
const results: number[] = [];
for (let round = 0; round < 3; round++) {
  const t0 = performance.now();
  await pool(READS, async () => {
    const a = await registry.getAgent('bench');
    if (!a) throw new Error('missing agent');
  });
  results.push((READS / (performance.now() - t0)) * 1000);
}
results.sort((a, b) => a - b);
console.log(
  `registry reads/s (get_agent via simulateTransaction over HTTP, ${CONCURRENCY} concurrent): median ${results[1]!.toFixed(0)} (runs ${results.map((r) => r.toFixed(0)).join(', ')}; target 500)`,
);

// Transactions: one source account per worker so sequence numbers stay in order;
// transactions are built and signed before timing (the client's ed25519 is JS).
const server = new rpc.Server(net.rpcUrl, { allowHttp: true });
const dest = Keypair.random().publicKey();
await accounts.fund(dest);
const workers = await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    const kp = Keypair.random();
    await accounts.fund(kp.publicKey());
    return { kp, seq: (await server.getAccount(kp.publicKey())).sequenceNumber() };
  }),
);
const perWorker = Math.ceil(TXS / CONCURRENCY);
const signed = workers.map((w) => {
  const acc = new Account(w.kp.publicKey(), w.seq);
  return Array.from({ length: perWorker }, () => {
    const tx = new TransactionBuilder(acc, { fee: BASE_FEE, networkPassphrase: net.passphrase })
      .addOperation(Operation.payment({ destination: dest, asset: Asset.native(), amount: '0.0000001' }))
      .setTimeout(600)
      .build();
    tx.sign(w.kp);
    return tx;
  });
});
const t0 = performance.now();
let ok = 0;
await Promise.all(
  signed.map(async (list) => {
    for (const tx of list) {
      const r = await server.sendTransaction(tx);
      if (r.status !== 'PENDING') throw new Error(`send failed: ${r.status}`);
      ok++;
    }
  }),
);
const secs = (performance.now() - t0) / 1000;
const sample = await server.getTransaction(signed[0]!.at(-1)!.hash().toString('hex'));
console.log(
  `submitted transactions/s (payments via sendTransaction over HTTP, applied at once): ${(ok / secs).toFixed(0)} (${ok} in ${secs.toFixed(2)} s; last status ${sample.status}; target 100)`,
);

// How soon a catalog mirror following the registry's events (its default 500 ms poll) lists a new registration
// (the 2 s the unit tests no longer time: packages/devnet/test/wire.test.ts, examples/echo/test/echo.test.ts).
const mirror = createCatalogMirror({ registry, cursorStore: new MemoryCursorStore() });
await mirror.start();
await mirror.ready();
const seenMs: number[] = [];
for (let i = 0; i < 5; i++) {
  const name = `bench-seen-${i}`;
  const started = performance.now();
  await registry.register(keypairSigner(owner.secret()), { service: name, pricePerCall: 1000n, endpoint: 'https://bench.test', description: 'bench' });
  while (!mirror.get(name)) await new Promise((r) => setTimeout(r, 5));
  seenMs.push(performance.now() - started);
}
await mirror.stop();
const sortedSeen = [...seenMs].sort((a, b) => a - b);
console.log(
  `registration to catalog mirror (register + default 500 ms poll): median ${sortedSeen[2]!.toFixed(0)} ms (runs ${seenMs.map((m) => m.toFixed(0)).join(', ')}; target 2000)`,
);
child.kill('SIGTERM');
