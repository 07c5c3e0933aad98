import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Keypair } from '@stellar/stellar-sdk';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { createRegistryClient, keypairSigner, resolveNetwork } from '@farebox/stellar';
import { freePort, spawnGateway, type GatewayProcess } from './process-kit.js';

// The deployment of docs/deploy.md on this machine, for the fault suite
// (`pnpm bench faults`, faults.pg.test.ts): its own PostgreSQL and Redis on
// spare ports (so killing them hurts nobody else), a devnet, a loopback
// service, and gateways as child processes sharing the database and Redis.
// Each dependency can be killed with SIGKILL and started again on its port.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const OPERATOR_EMAIL = 'operator@fault.example';

/** A server process this kit started: SIGKILL it (and its children), start it again on the same port. */
export interface Dependency {
  readonly url: string;
  readonly port: number;
  /** `kill -9` of the server and the processes it started. */
  kill(): Promise<void>;
  /** Starts it again (same port, same data); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it for good and removes its data. */
  close(): Promise<void>;
}

/** The process ids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** SIGKILL `child` and the processes it started; resolves once they are gone. */
async function killTree(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const kids = childrenOf(pid);
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(pid, 'SIGKILL');
  for (const k of kids) {
    try {
      process.kill(k, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await exited;
  for (let i = 0; i < 200 && kids.some(alive); i++) await sleep(25);
}

/** The newest PostgreSQL server binaries of this machine (Debian's /usr/lib/postgresql/<version>/bin). */
export function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error(`no PostgreSQL server binaries under ${root}/<version>/bin (initdb, postgres): install postgresql`);
  return join(root, versions[0], 'bin');
}

/** Runs as the `postgres` user when this process is root (PostgreSQL refuses to run as root). */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * A PostgreSQL server of its own: a fresh cluster (initdb, trust auth,
 * fsync off: a crash of the server process, not of the machine, loses
 * nothing committed) on a spare port, database `postgres`.
 */
export async function startPostgres(): Promise<Dependency> {
  const bin = postgresBin();
  const user = postgresUser();
  const dir = mkdtempSync(join(tmpdir(), 'farebox-fault-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], {
    stdio: 'pipe',
    ...(user ?? {}),
  });
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;
  let log = '';
  const start = async () => {
    log = '';
    child = spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200'],
      { stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) },
    );
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    const started = Date.now();
    for (;;) {
      const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      try {
        await c.connect();
        await c.end();
        return;
      } catch {
        await c.end().catch(() => undefined);
        if (child.exitCode !== null || Date.now() - started > 60_000) throw new Error(`PostgreSQL did not start on port ${port}:\n${log}`);
        await sleep(100);
      }
    }
  };
  await start();
  return {
    url,
    port,
    kill: () => (child ? killTree(child) : Promise.resolve()),
    start,
    async close() {
      if (child) await killTree(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A Redis server of its own on a spare port (no persistence: a restart starts empty, as after a crash without AOF). */
export async function startRedis(): Promise<Dependency> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = c;
      let out = '';
      c.stdout!.on('data', (d) => {
        out += d;
        if (/Ready to accept connections/.test(out)) resolve();
      });
      c.stderr!.on('data', (d) => (out += d));
      c.once('error', reject);
      c.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
    });
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill: () => (child ? killTree(child) : Promise.resolve()),
    start,
    close: () => (child ? killTree(child) : Promise.resolve()),
  };
}

/** A paid service on loopback that answers at once (it does not check certificates: the service's own work is not what is measured). */
export async function startLoopbackService(): Promise<{ endpoint: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'farebox-certificate-versions': 'v1, v2' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface FaultDeployment {
  postgres: Dependency;
  redis: Dependency;
  devnet: Devnet;
  /** The gateways' processes, in start order (`null` once killed). */
  gateways: Array<{ url: string; process: GatewayProcess; dead: boolean }>;
  service: string;
  /** Price of one call, base units. */
  price: bigint;
  /** Sign-up credit of each account, base units. */
  credit: bigint;
  /** Accounts signed up, each with an API key. */
  accounts: Array<{ id: string; key: string }>;
  /** What the gateways said about their dependencies: `event` dependency and liveness lines, warnings and errors (the access and call lines are left out). */
  said: Array<{ t: number; gateway: number; line: string }>;
  /** An API key of an operator account (granted in the database): the ledger audit through the operator API. */
  operatorKey: string;
  /** `kill -9` of gateway `i`. */
  killGateway(i: number): Promise<void>;
  close(): Promise<void>;
}

export interface FaultDeploymentOptions {
  gateways?: number;
  accounts?: number;
  /** The gateways' call timeout (FAREBOX_CALL_TIMEOUT_MS), ms. */
  callTimeoutMs?: number;
  /** The gateways' log level (default info, as deployed: a dependency that comes back says so at info). */
  logLevel?: string;
}

/** A line worth keeping: a dependency or liveness event, a warning or an error, or anything not JSON (a crash). */
const worthSaying = (line: string) =>
  line.trim() !== '' && (!line.startsWith('{') || /"event":"(dependency|liveness)"/.test(line) || /"level":(40|50|60)\b/.test(line));

/**
 * Starts the deployment: PostgreSQL, Redis, a devnet, a loopback service
 * registered as `faulty` (0.001 USD a call), `gateways` gateways (child
 * processes of `farebox-gateway` from its sources, one keystore key, one
 * database, one Redis) and `accounts` accounts with 1000 USD of sign-up
 * credit each.
 */
export async function startFaultDeployment(options: FaultDeploymentOptions = {}): Promise<FaultDeployment> {
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
  };
  try {
    const postgres = await startPostgres();
    closers.push(() => postgres.close());
    const redis = await startRedis();
    closers.push(() => redis.close());
    const devnet = await startDevnet({ port: 0, closeIntervalMs: 200, escrow: { rateLimit: false } });
    closers.push(() => devnet.close());
    const svc = await startLoopbackService();
    closers.push(() => svc.close());

    const network = resolveNetwork({ network: 'local', devnetUrl: devnet.url, env: {} });
    const owner = Keypair.random();
    await fetch(`${devnet.url}/friendbot?addr=${owner.publicKey()}`);
    const price = 10_000n;
    await createRegistryClient(network).register(keypairSigner(owner.secret()), {
      service: 'faulty',
      pricePerCall: price,
      endpoint: svc.endpoint,
      description: 'a loopback service for the fault suite',
    });

    const keystoreKey = randomBytes(32).toString('hex');
    const gateways: FaultDeployment['gateways'] = [];
    const said: FaultDeployment['said'] = [];
    closers.push(async () => {
      for (const g of gateways) if (!g.dead) await killTree(g.process.child);
    });
    for (let i = 0; i < (options.gateways ?? 2); i++) {
      const port = await freePort();
      const proc = spawnGateway({
        NODE_ENV: 'production',
        PORT: String(port),
        FAREBOX_DATA_DIR: mkdtempSync(join(tmpdir(), 'farebox-fault-gw-')),
        FAREBOX_DEVNET_URL: devnet.url,
        FAREBOX_KEYSTORE_KEY: keystoreKey,
        DATABASE_URL: postgres.url,
        FAREBOX_REDIS_URL: redis.url,
        FAREBOX_LOG_LEVEL: options.logLevel ?? 'info',
        FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true',
        FAREBOX_AUTH_RATE_LIMIT: '10000',
        FAREBOX_ACCOUNT_RATE_LIMIT: '10000000',
        FAREBOX_SIGNUP_CREDIT: '1000',
        FAREBOX_CALL_TIMEOUT_MS: String(options.callTimeoutMs ?? 3000),
      });
      let rest = '';
      const each = (chunk: Buffer) => {
        const lines = (rest + chunk.toString('utf8')).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) if (worthSaying(line)) said.push({ t: Date.now(), gateway: i, line });
      };
      proc.child.stdout!.on('data', each);
      proc.child.stderr!.on('data', each);
      // One at a time: the first one migrates the database.
      gateways.push({ url: await proc.started, process: proc, dead: false });
    }

    const accounts: FaultDeployment['accounts'] = [];
    const signUp = async (email: string) => {
      const base = gateways[0]!.url;
      const signup = await fetch(`${base}/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'correct horse battery' }),
      });
      if (signup.status !== 201) throw new Error(`sign-up failed: ${signup.status} ${await signup.text()}`);
      const cookie = signup.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const body = (await signup.json()) as { id: string; csrf_token: string };
      const created = await fetch(`${base}/v1/api-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': body.csrf_token },
        body: JSON.stringify({ name: 'fault' }),
      });
      return { id: body.id, key: ((await created.json()) as { key: string }).key };
    };
    for (let i = 0; i < (options.accounts ?? 4); i++) accounts.push(await signUp(`fault${i}@example.com`));
    // The operator: granted in the database, as `farebox operator grant` does.
    const operator = await signUp(OPERATOR_EMAIL);
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query(`INSERT INTO gw_operator_grants (account_id, granted_by) VALUES ($1, 'fault suite')`, [operator.id]);
    await admin.end();
    const operatorKey = operator.key;
    // Every gateway sees the service before the load starts.
    for (const g of gateways) {
      for (let i = 0; ; i++) {
        const list = (await (await fetch(`${g.url}/v1/agents`, { headers: { authorization: `Bearer ${accounts[0]!.key}` } })).json()) as Array<{
          service: string;
        }>;
        if (list.some((s) => s.service === 'faulty')) break;
        if (i > 300) throw new Error(`${g.url} never listed the service`);
        await sleep(100);
      }
    }
    return {
      postgres,
      redis,
      devnet,
      gateways,
      service: 'faulty',
      price,
      credit: 1000n * 10_000_000n,
      accounts,
      said,
      operatorKey,
      async killGateway(i) {
        const g = gateways[i]!;
        // The signal first, at once (a gateway starts no processes): the calls under way are cut; then callers stop choosing it.
        const exited = new Promise((r) => g.process.child.once('exit', r));
        g.process.child.kill('SIGKILL');
        g.dead = true;
        await exited;
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
