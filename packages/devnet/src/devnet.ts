import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { Account, Asset, Keypair, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import {
  DEFAULT_DEVNET_URL,
  devnetPassphrase,
  LOCAL_REGISTRY_CONTRACT_ID,
  LOCAL_USDC_ISSUER,
  LOCAL_USDC_ISSUER_SECRET,
  resolveNetwork,
  unitsToDecimal,
  type NetworkConfig,
} from '@farebox/stellar';
import { registryContract, stellarAssetContract, type DevnetContract } from './contracts.js';
import { Chain, type TxRecord } from './core.js';
import { renderExplorer } from './explorer.js';
import { createHorizon, failedReply, horizonTx, type HttpReply } from './horizon.js';
import { channelContract, channelFactoryContract, channelIdsInStorage } from './channel/contract.js';
import { createEscrowApi, type EscrowApiOptions } from './escrow/api.js';
import { DataDir } from './persist.js';
import { createRpc } from './rpc.js';
import { sha256 } from './xdrutil.js';

export interface DevnetOptions {
  /**
   * How soon a ledger closes once a transaction is pending, in ms (default 1000), or 'instant'
   * to close a ledger per transaction. Empty ledgers close every 5 s, as on testnet.
   */
  closeIntervalMs?: number | 'instant';
  /** Directory for persistence (state.json + txlog.jsonl); in memory when omitted. */
  dataDir?: string;
  /** Path prefix the handler answers under when it sees full URLs (default ''). */
  basePath?: string;
  /** Public base URL (including basePath) used in links, getNetwork's friendbotUrl and `network`. */
  url?: string;
  /**
   * The Trustless Work escrow API at `${url}/escrow`: the accepted `x-api-key`
   * (any non-empty key when omitted) and the per-key rate limit (default 50 per
   * 60 s like the provider; `rateLimit: false` disables it for tests and benches).
   */
  escrow?: EscrowApiOptions;
  /**
   * The network passphrase: `local` (default, 'Standalone Network ; February 2017'),
   * `testnet` (the devnet stands in for Stellar testnet: stock x402 `stellar:testnet`
   * clients sign for it) or a literal passphrase. The USDC contract id follows it.
   */
  passphrase?: string;
}

export interface DevnetStats {
  ledger: number;
  closeTime: number;
  accounts: number;
  transactions: number;
  events: number;
  pending: number;
  contracts: string[];
}

export type DevnetHandler = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

export interface DevnetCore {
  readonly url: string;
  readonly rpcUrl: string;
  readonly horizonUrl: string;
  readonly friendbotUrl: string;
  /** resolveNetwork({ network: 'local', devnetUrl: url, passphrase }): x402Network is 'stellar:testnet' under the testnet passphrase. */
  readonly network: NetworkConfig;
  readonly handler: DevnetHandler;
  readonly chain: Chain;
  /** Changes the public base URL (a host learns its port after listening). */
  setUrl(url: string): void;
  /** Hosts another contract (the escrow seam): dispatch by contract id. */
  registerContract(contract: DevnetContract): void;
  /** Pays USDC from the issuer (the account needs a trustline); returns the transaction hash. */
  mintUsdc(to: string, amount: bigint): Promise<string>;
  /** Creates (or tops up with USDC, when asked) an account, as the friendbot does. */
  friendbot(addr: string, usdc?: bigint): Promise<TxRecord>;
  /** Closes a ledger now. */
  closeLedger(): void;
  stats(): DevnetStats;
  close(): Promise<void>;
}

export interface Devnet extends DevnetCore {
  readonly port: number;
}

/** How often an empty ledger closes: testnet's pace. */
const IDLE_LEDGER_MS = 5_000;
const FRIENDBOT_STARTING_BALANCE = 10_000n * 10_000_000n;
const friendbotKeypair = Keypair.fromRawEd25519Seed(sha256('farebox-devnet:friendbot'));
const issuerKeypair = Keypair.fromSecret(LOCAL_USDC_ISSUER_SECRET);

class FriendbotError extends Error {
  constructor(readonly reply: HttpReply) {
    super('friendbot refused');
  }
}

function send(res: ServerResponse, reply: HttpReply): void {
  const isText = typeof reply.body === 'string';
  const body = isText ? (reply.body as string) : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'content-type': reply.contentType ?? (isText ? 'text/html; charset=utf-8' : 'application/json; charset=utf-8'),
    'access-control-allow-origin': '*',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function readBody(req: IncomingMessage, limit = 2 * 1024 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new Error('request body too large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseUsdcAmount(text: string): bigint | undefined {
  const m = /^(\d{1,12})(?:\.(\d{1,7}))?$/.exec(text.trim());
  if (!m) return undefined;
  return BigInt(m[1]!) * 10_000_000n + BigInt((m[2] ?? '').padEnd(7, '0'));
}

/**
 * A local Stellar network without a listener: mount `handler` in a host (the
 * gateway embeds it under /devnet).
 *
 * @example
 * const devnet = createDevnet({ url: 'http://127.0.0.1:8787/devnet' });
 * app.use('/devnet', devnet.handler);
 */
export function createDevnet(opts: DevnetOptions = {}): DevnetCore {
  const basePath = (opts.basePath ?? '').replace(/\/+$/, '');
  let url = (opts.url ?? DEFAULT_DEVNET_URL).replace(/\/+$/, '');
  const passphrase = devnetPassphrase(opts.passphrase);
  const resolve = () => resolveNetwork({ network: 'local', devnetUrl: url, passphrase, env: {} });
  let network = resolve();
  const instant = opts.closeIntervalMs === 'instant';
  const interval = typeof opts.closeIntervalMs === 'number' ? Math.max(10, opts.closeIntervalMs) : 1000;

  // USDC's issuer is the network's (testnet's under the testnet passphrase, so the token is testnet's contract);
  // the devnet signs its mints with its own issuer key, the issuer account's signer.
  const usdcIssuer = network.usdc.issuer;
  const usdcAsset = new Asset('USDC', usdcIssuer);
  const chain = new Chain({
    passphrase: passphrase,
    usdc: usdcAsset,
    ...(usdcIssuer === LOCAL_USDC_ISSUER ? {} : { signers: { [usdcIssuer]: LOCAL_USDC_ISSUER } }),
  });
  chain.registerContract(registryContract(LOCAL_REGISTRY_CONTRACT_ID));
  chain.registerContract(stellarAssetContract(usdcAsset.contractId(passphrase), usdcAsset));

  const dataDir = opts.dataDir ? new DataDir(opts.dataDir, chain) : undefined;
  if (!dataDir?.load()) {
    chain.createGenesisAccount(friendbotKeypair.publicKey(), 100_000_000_000n * 10_000_000n);
    chain.createGenesisAccount(usdcIssuer, 10_000n * 10_000_000n);
    chain.closeLedger();
  }
  // The one-way payment channel factory, and the channels a loaded data directory holds.
  chain.registerContract(channelFactoryContract(passphrase));
  for (const id of channelIdsInStorage(chain.data.values())) if (!chain.contracts.has(id)) chain.registerContract(channelContract(id, passphrase));
  let lastClose = Date.now();
  chain.onClose = (_ledger, txs) => {
    lastClose = Date.now();
    if (!dataDir) return;
    dataDir.append(txs, (t) => chain.events.filter((e) => e.txHash === t.hash));
    if (txs.length) dataDir.scheduleSave();
  };

  // Ledgers with transactions close at the close interval (or at once with 'instant'); empty
  // ledgers close at testnet's pace, one per 5 s, so that the ledger sequence advances as on
  // testnet: a Soroban authorisation signed to expire ceil(N / 5) ledgers ahead (x402's exact
  // client assumes 5 s per ledger) stays valid for about N seconds.
  const timer = setInterval(
    () => {
      if (chain.pendingCount > 0 || Date.now() - lastClose >= IDLE_LEDGER_MS) chain.closeLedger();
    },
    instant ? IDLE_LEDGER_MS : Math.min(interval, IDLE_LEDGER_MS),
  );
  timer.unref();

  const awaitInclusion = (hash: string) => chain.waitFor(hash);
  const onSubmitted = () => {
    if (instant) chain.closeLedger();
  };
  const rpc = createRpc(chain, { friendbotUrl: () => `${url}/friendbot`, instant, onSubmitted });
  const rpcFriendbot = () => `${url}/friendbot`;
  const escrow = createEscrowApi(chain, {
    ...opts.escrow,
    async submit(signedXdr) {
      const r = chain.submit(signedXdr);
      if (r.status === 'ERROR') return { refused: r.resultCodes ? [r.resultCodes.transaction, ...r.resultCodes.operations].join(', ') : 'refused' };
      if (r.status === 'DUPLICATE') return chain.txs.get(r.hash) ?? chain.waitFor(r.hash);
      onSubmitted();
      return chain.waitFor(r.hash);
    },
  });
  const horizon = createHorizon(chain, { baseUrl: () => url, awaitInclusion, onSubmitted });

  /** A transaction of `source` (default: the key's own account; the USDC issuer's is signed by the devnet's issuer key). */
  async function submitSigned(kp: Keypair, build: (b: TransactionBuilder) => TransactionBuilder, source = kp.publicKey()): Promise<TxRecord> {
    const acc = chain.accounts.get(source)!;
    const tx = build(new TransactionBuilder(new Account(source, acc.seq.toString()), { fee: '100', networkPassphrase: passphrase }))
      .setTimeout(300)
      .build();
    tx.sign(kp);
    const r = chain.submit(tx.toEnvelope().toXDR('base64'));
    if (r.status === 'ERROR')
      throw new FriendbotError(failedReply({ envelopeXdr: tx.toXDR(), resultXdr: r.errorResultXdr!, resultCodes: r.resultCodes!, hash: r.hash }));
    chain.closeLedger();
    return chain.waitFor(r.hash);
  }

  async function friendbot(addr: string, usdc?: bigint): Promise<TxRecord> {
    const existing = chain.accounts.get(addr);
    if (existing && usdc === undefined) {
      throw new FriendbotError(horizon.problem(400, 'Bad Request', `createAccountAlreadyExist: account ${addr} is already funded (op_already_exists)`));
    }
    let rec: TxRecord | undefined;
    if (!existing) {
      rec = await submitSigned(friendbotKeypair, (b) =>
        b.addOperation(Operation.createAccount({ destination: addr, startingBalance: unitsToDecimal(FRIENDBOT_STARTING_BALANCE) })),
      );
      if (!rec.successful) throw new FriendbotError(failedReply(rec));
    }
    if (usdc !== undefined && usdc > 0n) {
      if (!chain.accounts.get(addr)?.usdc) {
        if (rec) return rec; // a new account cannot hold a trustline yet: XLM only
        throw new FriendbotError(
          horizon.problem(400, 'Bad Request', `op_no_trust: ${addr} has no USDC trustline; add one (changeTrust) before asking for USDC`),
        );
      }
      const pay = await submitSigned(
        issuerKeypair,
        (b) => b.addOperation(Operation.payment({ destination: addr, asset: usdcAsset, amount: unitsToDecimal(usdc) })),
        usdcIssuer,
      );
      if (!pay.successful) throw new FriendbotError(failedReply(pay));
      return pay;
    }
    return rec!;
  }

  async function friendbotRoute(query: URLSearchParams): Promise<HttpReply> {
    const addr = query.get('addr') ?? '';
    if (!/^G[A-Z2-7]{55}$/.test(addr)) return horizon.problem(400, 'Bad Request', 'addr must be a G... account id');
    try {
      Keypair.fromPublicKey(addr);
    } catch {
      return horizon.problem(400, 'Bad Request', 'addr is not a valid G... account id');
    }
    let usdc: bigint | undefined;
    const usdcText = query.get('usdc');
    if (usdcText !== null) {
      usdc = parseUsdcAmount(usdcText);
      if (usdc === undefined || usdc > 1_000_000n * 10_000_000n)
        return horizon.problem(400, 'Bad Request', 'usdc must be a decimal amount of at most 1000000 with up to 7 decimals');
    }
    try {
      const rec = await friendbot(addr, usdc);
      return { status: 200, body: horizonTx(rec, url) };
    } catch (e) {
      if (e instanceof FriendbotError) return e.reply;
      throw e;
    }
  }

  async function route(req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): Promise<void> {
    let raw = req.url ?? '/';
    if (basePath && (raw === basePath || raw.startsWith(`${basePath}/`) || raw.startsWith(`${basePath}?`))) raw = raw.slice(basePath.length) || '/';
    const u = new URL(raw, 'http://devnet.local');
    const path = u.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (method === 'OPTIONS') {
      res.writeHead(204, {
        'access-control-allow-origin': '*',
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': 'content-type, x-api-key',
      });
      res.end();
      return;
    }
    if (path === '/soroban/rpc' && method === 'POST') {
      const text = await readBody(req);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return send(res, { status: 200, body: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } } });
      }
      return send(res, { status: 200, body: Array.isArray(body) ? body.map((b) => rpc(b)) : rpc(body) });
    }
    if (path.startsWith('/escrow/')) {
      const reply = await escrow.handle(
        method,
        path.slice('/escrow'.length),
        u.searchParams,
        req.headers,
        async () => JSON.parse((await readBody(req)) || 'null') as unknown,
      );
      res.writeHead(reply.status, { 'content-type': 'application/json; charset=utf-8', 'access-control-allow-origin': '*', ...reply.headers });
      res.end(JSON.stringify(reply.body));
      return;
    }
    if (path === '/friendbot' && (method === 'GET' || method === 'POST')) return send(res, await friendbotRoute(u.searchParams));
    if (path === '/transactions' && method === 'POST') {
      const text = await readBody(req);
      const form = (req.headers['content-type'] ?? '').includes('json')
        ? new URLSearchParams({ tx: String((JSON.parse(text) as { tx?: unknown }).tx ?? '') })
        : new URLSearchParams(text);
      return send(res, await horizon.submit(form));
    }
    if (method === 'GET') {
      if (path === '/') return send(res, horizon.root());
      if (path === '/fee_stats') return send(res, horizon.feeStats());
      let m = /^\/accounts\/([^/]+)$/.exec(path);
      if (m) return send(res, horizon.account(decodeURIComponent(m[1]!)));
      m = /^\/transactions\/([0-9a-fA-F]{64})$/.exec(path);
      if (m) return send(res, horizon.transaction(m[1]!));
      m = /^\/explorer\/local(?:\/(tx|account|contract)\/([^/]+))?$/.exec(path);
      if (m) {
        const out = renderExplorer(chain, `${url}/explorer/local`, m[1] ?? '', decodeURIComponent(m[2] ?? ''));
        return send(res, { status: out.status, body: out.html, contentType: 'text/html; charset=utf-8' });
      }
    }
    if (next) return next();
    send(res, horizon.problem(404, 'Resource Missing', `no devnet route for ${method} ${path}`));
  }

  const handler: DevnetHandler = (req, res, next) => {
    route(req, res, next).catch((e: unknown) => {
      if (res.headersSent) return res.destroy();
      send(res, {
        status: 500,
        body: {
          type: 'https://stellar.org/horizon-errors/server_error',
          title: 'Internal Server Error',
          status: 500,
          detail: e instanceof Error ? e.message : String(e),
        },
      });
    });
  };

  let closed = false;
  const core: DevnetCore = {
    get url() {
      return url;
    },
    get rpcUrl() {
      return network.rpcUrl;
    },
    get horizonUrl() {
      return network.horizonUrl;
    },
    get friendbotUrl() {
      return rpcFriendbot();
    },
    get network() {
      return network;
    },
    handler,
    chain,
    setUrl(next) {
      url = next.replace(/\/+$/, '');
      network = resolve();
    },
    registerContract: (c) => chain.registerContract(c),
    async mintUsdc(to, amount) {
      if (typeof amount !== 'bigint' || amount <= 0n) throw new Error('amount must be a positive bigint of base units');
      try {
        const rec = await submitSigned(
          issuerKeypair,
          (b) => b.addOperation(Operation.payment({ destination: to, asset: usdcAsset, amount: unitsToDecimal(amount) })),
          usdcIssuer,
        );
        if (!rec.successful) throw new Error(`minting USDC failed: ${rec.resultCodes.transaction} (${rec.resultCodes.operations.join(', ')})`);
        return rec.hash;
      } catch (e) {
        if (e instanceof FriendbotError)
          throw new Error(`minting USDC refused: ${JSON.stringify((e.reply.body as { extras?: unknown }).extras ?? e.reply.body)}`);
        throw e;
      }
    },
    friendbot,
    closeLedger: () => void chain.closeLedger(),
    stats: () => ({
      ledger: chain.latest.seq,
      closeTime: chain.latest.closeTime,
      accounts: chain.accounts.size,
      transactions: chain.txs.size,
      events: chain.events.length,
      pending: chain.pendingCount,
      contracts: [...chain.contracts.keys()],
    }),
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      if (chain.pendingCount) chain.closeLedger();
      dataDir?.saveNow();
    },
  };
  return core;
}

/** A certificate and its private key (PEM) for serving the devnet over https. */
export interface DevnetTls {
  cert: string | Buffer;
  key: string | Buffer;
}

/**
 * Starts a devnet listening on HTTP, or HTTPS with `tls` (port 0 picks a free port).
 * Stock Stellar SDK clients (`AssembledTransaction.build`) refuse plain http RPC
 * URLs: serve https to let them in.
 *
 * @example
 * const devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
 * const registry = createRegistryClient(devnet.network);
 */
export async function startDevnet(opts: DevnetOptions & { port?: number; host?: string; tls?: DevnetTls } = {}): Promise<Devnet> {
  const host = opts.host ?? '127.0.0.1';
  const core = createDevnet(opts);
  const server: Server = opts.tls
    ? createTlsServer({ cert: opts.tls.cert, key: opts.tls.key }, (req, res) => core.handler(req, res))
    : createServer((req, res) => core.handler(req, res));
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 8000, host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : (opts.port ?? 8000);
  const publicHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  if (!opts.url) core.setUrl(`${opts.tls ? 'https' : 'http'}://${publicHost}:${port}${(opts.basePath ?? '').replace(/\/+$/, '')}`);
  const closeCore = core.close.bind(core);
  const devnet: Devnet = {
    get url() {
      return core.url;
    },
    get rpcUrl() {
      return core.rpcUrl;
    },
    get horizonUrl() {
      return core.horizonUrl;
    },
    get friendbotUrl() {
      return core.friendbotUrl;
    },
    get network() {
      return core.network;
    },
    handler: core.handler,
    chain: core.chain,
    port,
    setUrl: core.setUrl,
    registerContract: core.registerContract,
    mintUsdc: core.mintUsdc,
    friendbot: core.friendbot,
    closeLedger: core.closeLedger,
    stats: core.stats,
    async close() {
      await closeCore();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return devnet;
}
