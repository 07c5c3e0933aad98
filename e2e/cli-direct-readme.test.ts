// The `--direct` lines of the READMEs, run as written by a shell against a local
// stack: the gateway with its embedded devnet, the real `echo` example (escrow
// off, as `npm start` runs it) and a service made by `farebox init`. Each ends
// paid and served, or refused with nothing moved; and when money sits in an
// escrow the service did not serve, the command the error prints gets it back.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { startGateway, type RunningGateway } from '@farebox/gateway';
import { parseAmount, splitFee } from '@farebox/protocol';
import { createProvider } from '@farebox/provider';
import { createAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_BIN, ensureBuilt, start, type RunResult } from './cli.js';
import { eventually } from '@farebox/test-kit';

const repo = join(import.meta.dirname, '..');
const TSX = join(repo, 'node_modules', '.bin', 'tsx');
const TEN_USDC = 100_000_000n;

interface Launched {
  output(): string;
  stop(): Promise<void>;
}

/** Starts a long-running program in its own process group and waits for `ready` on its output. */
async function launch(args: string[], opts: { cwd: string; env: Record<string, string>; ready: RegExp }): Promise<Launched> {
  const child: ChildProcess = spawn(TSX, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
    await exited;
  };
  const state = await eventually(
    `${args.join(' ')} gets ready (or exits)`,
    () => (opts.ready.test(out) ? 'ready' : child.exitCode !== null ? 'exited' : undefined),
    { timeoutMs: 90_000, intervalMs: 100 },
  ).catch(() => 'late');
  if (state !== 'ready') {
    await stop();
    throw new Error(`${args.join(' ')} did not get ready (${state}):\n${out}`);
  }
  return { output: () => out, stop };
}

/** The one line of a README that runs `--direct` (inside its sh block). */
async function directLine(readme: string): Promise<string> {
  const lines = (await readFile(readme, 'utf8')).split('\n').filter((l) => l.startsWith('farebox ') && l.includes('--direct --keypair payer.key'));
  expect(lines, `the --direct line of ${readme}`).toHaveLength(1);
  return lines[0]!;
}

describe('the READMEs --direct lines, run as written against the local stack', () => {
  let gw: RunningGateway;
  let tmp: string;
  let shim: string;
  let n = 0;
  const running: Launched[] = [];

  const usdcOf = (address: string) => gw.devnet!.chain.accounts.get(address)?.usdc?.balance ?? 0n;
  const contracts = () => gw.devnet!.stats().contracts.length;

  /** Runs a command line with `sh` in a fresh folder, `farebox` on the PATH (the built CLI), against this gateway. */
  async function sh(line: string, cwd?: string): Promise<RunResult & { cwd: string }> {
    const dir = cwd ?? (await mkdtemp(join(tmp, `run${n++}-`)));
    const home = join(tmp, `home${n++}`);
    const env = { PATH: `${shim}:${process.env.PATH ?? ''}`, HOME: home, FAREBOX_CONFIG_DIR: join(home, 'farebox'), FAREBOX_URL: gw.url, BROWSER: 'none' };
    return { ...(await start('sh', ['-c', line], { env, cwd: dir }).done), cwd: dir };
  }
  const payerOf = async (dir: string) => Keypair.fromSecret((await readFile(join(dir, 'payer.key'), 'utf8')).trim()).publicKey();

  beforeAll(async () => {
    ensureBuilt();
    tmp = await mkdtemp(join(tmpdir(), 'farebox-direct-readme-'));
    shim = join(tmp, 'bin');
    await mkdir(shim);
    await writeFile(join(shim, 'farebox'), `#!/bin/sh\nexec "${process.execPath}" "${CLI_BIN}" "$@"\n`);
    await chmod(join(shim, 'farebox'), 0o755);
    gw = await startGateway({
      port: 0,
      network: 'local',
      allowLoopbackEndpoints: true,
      logLevel: 'warn',
      dataDir: join(tmp, 'gateway'),
      devnetCloseIntervalMs: 'instant',
      devnetInMemory: true,
      callTimeoutMs: 5000,
      // A never-served escrow is refunded as soon as its funder disputes it.
      env: { FAREBOX_DISPUTE_AUTO_REFUND_MINUTES: '0' },
    });
  }, 120_000);

  afterAll(async () => {
    for (const r of running) await r.stop();
    await gw?.close();
  });

  it("the CLI README's line against the example echo (escrow off) is refused before any escrow exists: not a base unit moves", async () => {
    // The example as `npm start` runs it (scripts/start.mjs): the platform key read from the gateway, no escrow API key.
    const echo = await launch(['--conditions=@farebox/source', 'src/main.ts'], {
      cwd: join(repo, 'examples', 'echo'),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: tmp,
        PORT: '0',
        STELLAR_NETWORK: 'local',
        FAREBOX_URL: gw.url,
        FAREBOX_DEVNET_URL: `${gw.url}/devnet`,
        AGENT_WALLET_SECRET: Keypair.random().secret(),
      },
      ready: /registry: \w+ "echo"/,
    });
    running.push(echo);
    const line = await directLine(join(repo, 'apps', 'cli', 'README.md'));
    expect(line).toBe(`farebox devnet keypair payer.key --usdc 10 && farebox call echo '{"hi":1}' --direct --keypair payer.key`);
    const before = contracts();

    const r = await sh(line);

    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain('payer.key');
    expect(r.stderr).toContain(
      'farebox: echo takes no direct payment: it is paid through the gateway only; drop --direct to pay from your credits (nothing was paid)',
    );
    expect(r.stderr).not.toContain('Opening the escrow');
    expect(usdcOf(await payerOf(r.cwd))).toBe(TEN_USDC);
    expect(contracts()).toBe(before);
  });

  it('the line of the README that farebox init writes: refused with nothing moved while escrow is off, paid and served once TRUSTLESS_WORK_API_KEY is set', async () => {
    const init = await sh('farebox init svc --json');
    expect(init.code, init.stderr).toBe(0);
    const project = join(init.cwd, 'svc');
    // `npm install` of the scaffold, offline: its one dependency linked from this workspace (built).
    await mkdir(join(project, 'node_modules', '@farebox'), { recursive: true });
    await symlink(join(repo, 'packages', 'provider'), join(project, 'node_modules', '@farebox', 'provider'), 'dir');
    const env = { PATH: process.env.PATH ?? '', HOME: tmp, PORT: '0', FAREBOX_URL: gw.url };
    const line = await directLine(join(project, 'README.md'));
    expect(line).toBe(`farebox devnet keypair payer.key --usdc 10 && farebox call svc '{"text":"hello"}' --direct --keypair payer.key`);

    const gatewayOnly = await launch(['src/index.ts'], { cwd: project, env, ready: /registry: \w+ "svc"/ });
    running.push(gatewayOnly);
    const before = contracts();
    const refused = await sh(line);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('farebox: svc takes no direct payment: it is paid through the gateway only; drop --direct');
    expect(usdcOf(await payerOf(refused.cwd))).toBe(TEN_USDC);
    expect(contracts()).toBe(before);
    await gatewayOnly.stop();

    const withEscrow = await launch(['src/index.ts'], {
      cwd: project,
      env: { ...env, TRUSTLESS_WORK_API_KEY: 'any-key-on-the-devnet' },
      ready: /registry: \w+ "svc"/,
    });
    running.push(withEscrow);
    const owner = Keypair.fromSecret((await readFile(join(project, '.farebox', 'keypair'), 'utf8')).trim()).publicKey();
    const ownerBefore = usdcOf(owner);
    const paid = await sh(line);
    expect(paid.code, paid.stderr).toBe(0);
    expect(paid.stdout).toContain('"reversed": "olleh"');
    for (const step of ['Getting a quote', 'Opening the escrow', 'Funding the escrow', 'Calling the service']) expect(paid.stderr).toContain(`✓ ${step}`);
    const price = parseAmount('0.001');
    expect(usdcOf(await payerOf(paid.cwd))).toBe(TEN_USDC - price);
    expect(usdcOf(owner)).toBe(ownerBefore + splitFee(price).net);
  });

  it('a direct call the service fails after funding names the escrow and the one command that gets it back; run as printed, it refunds every base unit', async () => {
    const registry = createRegistryClient(gw.core.network);
    const owner = Keypair.random();
    await gw.devnet!.friendbot(owner.publicKey());
    await createAccounts(gw.core.network).ensureUsdcTrustline(keypairSigner(owner.secret()));
    const treasury = ((await (await fetch(`${gw.url}/v1/platform/key`)).json()) as { treasury: string }).treasury;
    const provider = createProvider({
      service: 'flaky',
      pricePerCall: '0.001',
      description: 'takes escrows, then fails',
      network: 'local',
      platform: { publicKey: gw.core.platformPublicKey },
      wallet: { secret: owner.secret() },
      registry,
      trustlessWork: { apiKey: 'provider-escrow-key', platformAddress: treasury, baseUrl: `${gw.devnet!.url}/escrow` },
      servedStorePath: join(tmp, 'served-flaky.json'),
      env: {},
    }).serve(() => {
      throw new Error('upstream model unavailable');
    });
    const listening = await provider.listen(0, '127.0.0.1');
    running.push({ output: () => '', stop: () => provider.close() });
    await registry.register(keypairSigner(owner.secret()), {
      service: 'flaky',
      pricePerCall: parseAmount('0.001'),
      endpoint: `${listening.url}/`,
      description: 'takes escrows, then fails',
    });

    const r = await sh(`farebox devnet keypair payer.key --usdc 10 && farebox call flaky '{"hi":1}' --direct --keypair payer.key`);
    expect(r.code).toBe(1);
    const payer = await payerOf(r.cwd);
    expect(usdcOf(payer)).toBe(TEN_USDC - 10_000n);
    const m =
      /^farebox: the service failed after escrow (C[A-Z2-7]{55}) was funded \(HTTP 500\): upstream model unavailable\nescrow \1 still holds 0\.001 USDC; get it back with:\n {2}(farebox dispute \1 --keypair payer\.key --url \S+)$/m.exec(
        r.stderr,
      );
    expect(m, r.stderr).not.toBeNull();
    const [, escrowId, command] = m!;
    expect(command).toBe(`farebox dispute ${escrowId} --keypair payer.key --url ${gw.url}`);

    const dispute = await sh(command!, r.cwd);
    expect(dispute.code, dispute.stderr).toBe(0);
    expect(dispute.stdout).toMatch(/state\s+resolved \(refund\)/);
    expect(usdcOf(payer)).toBe(TEN_USDC);
  });
});
