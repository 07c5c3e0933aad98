import { TransactionBuilder } from '@stellar/stellar-sdk';
import { formatAmount, parseAmount } from '@farebox/protocol';
import type { TxSigner } from '@farebox/stellar';
import type { z } from 'zod';
import { RequestBudget, systemClock, type EscrowClock } from './budget.js';
import { EscrowError } from './errors.js';
import { EscrowSchema, SendResponseSchema, WriteResponseSchema } from './schemas.js';

export interface EscrowRoles {
  approver: string;
  serviceProvider: string;
  platformAddress: string;
  releaseSigner: string;
  disputeResolver: string;
  receiver: string;
}

/** An escrow as the provider reports it, amounts in base units (1 USDC = 10,000,000). */
export interface Escrow {
  contractId: string;
  engagementId: string;
  title: string;
  description: string;
  roles: EscrowRoles;
  /** Base units (the API's human units converted exactly). */
  amount: bigint;
  /** Base units; 0 when the provider leaves it out (a just-deployed escrow). */
  balance: bigint;
  /** Percent, e.g. 5. */
  platformFee: number;
  milestones: Array<{ description: string; status: string; evidence?: string; approved: boolean }>;
  flags: { disputed: boolean; released: boolean; resolved: boolean };
  trustline: { address: string; symbol?: string; decimals?: number };
  isActive?: boolean;
  createdAt?: string;
}

export interface DeployInput {
  signer: string;
  engagementId: string;
  title: string;
  description: string;
  roles: EscrowRoles;
  amount: bigint;
  platformFee: number;
  milestones: Array<{ description: string }>;
  trustline: { address: string; symbol?: string; decimals?: number };
}

export interface SendResult {
  status: 'SUCCESS' | 'FAILED';
  message: string;
  contractId?: string;
  escrow?: Escrow;
  txHash?: string;
}

export interface EscrowClientOptions {
  /** e.g. https://dev.api.trustlesswork.com or `${devnet.url}/escrow`. */
  baseUrl: string;
  /** Sent as `x-api-key`. */
  apiKey: string;
  /** Network passphrase used when signing. */
  passphrase: string;
  /** Client-side request budget, shared by all calls of this client (default 50 per 60,000 ms). */
  budget?: { requests: number; windowMs: number };
  fetch?: typeof fetch;
  /** Retries after a 429 (default 3), waiting Retry-After (or 1 s, 2 s, 4 s ... when absent). */
  maxRetries?: number;
  /** The time the budget and the 429 backoff read and wait on (default the machine's; tests pass one whose waits take no time). */
  clock?: EscrowClock;
}

type RunOp = 'fundEscrow' | 'changeMilestoneStatus' | 'approveMilestone' | 'releaseFunds' | 'disputeEscrow' | 'resolveDispute' | 'withdrawRemainingFunds';

export interface EscrowClient {
  deploySingleRelease(input: DeployInput): Promise<string>;
  fundEscrow(input: { contractId: string; signer: string; amount: bigint }): Promise<string>;
  changeMilestoneStatus(input: {
    contractId: string;
    milestoneIndex: string;
    newStatus: string;
    newEvidence?: string;
    serviceProvider: string;
  }): Promise<string>;
  approveMilestone(input: { contractId: string; milestoneIndex: string; approver: string }): Promise<string>;
  releaseFunds(input: { contractId: string; releaseSigner: string }): Promise<string>;
  disputeEscrow(input: { contractId: string; signer: string }): Promise<string>;
  resolveDispute(input: { contractId: string; disputeResolver: string; distributions: Array<{ address: string; amount: bigint }> }): Promise<string>;
  withdrawRemainingFunds(input: { contractId: string; disputeResolver: string }): Promise<string>;
  getEscrows(contractIds: string[]): Promise<Escrow[]>;
  sendTransaction(signedXdr: string): Promise<SendResult>;
  deployAndSend(input: Omit<DeployInput, 'signer'>, signer: TxSigner): Promise<{ contractId: string; txHash: string; escrow?: Escrow }>;
  run<K extends RunOp>(op: K, input: Parameters<EscrowClient[K]>[0], signer: TxSigner): Promise<{ txHash: string; message: string }>;
}

/** Base units as the API's human amount: a JSON number when it converts back to the same base units, else a decimal string. */
export function toWireAmount(units: bigint): number | string {
  if (typeof units !== 'bigint' || units < 0n) throw new EscrowError('CONFIG', 'amounts must be non-negative bigint base units');
  const text = formatAmount(units, { trim: true });
  const n = Number(text);
  try {
    if (parseAmount(n) === units) return n;
  } catch {
    // not representable as a JSON number: send the exact decimal string
  }
  return text;
}

function positive(units: bigint, what: string): number | string {
  if (typeof units !== 'bigint' || units <= 0n) throw new EscrowError('CONFIG', `${what} must be a positive bigint of base units`);
  return toWireAmount(units);
}

function providerMessage(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return typeof body === 'string' && body ? body : undefined;
  const b = body as { message?: unknown; error?: unknown };
  if (typeof b.message === 'string') return b.message;
  if (Array.isArray(b.message)) return b.message.map(String).join('; ');
  if (typeof b.error === 'string') return b.error;
  return undefined;
}

function retryAfterMs(header: string | null, attempt: number, now: number): number {
  if (header) {
    const secs = Number(header);
    if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
    const at = Date.parse(header);
    if (Number.isFinite(at)) return Math.max(0, at - now);
  }
  return Math.min(30_000, 1000 * 2 ** attempt);
}

function toEscrow(parsed: z.output<typeof EscrowSchema>, fallbackId?: string): Escrow {
  const contractId = parsed.contractId ?? fallbackId;
  if (!contractId) throw new EscrowError('BAD_RESPONSE', 'the provider returned an escrow without a contractId');
  const t = parsed.trustline;
  const escrow: Escrow = {
    contractId,
    engagementId: parsed.engagementId,
    title: parsed.title,
    description: parsed.description,
    roles: { ...parsed.roles },
    amount: parsed.amount,
    balance: parsed.balance ?? 0n,
    platformFee: parsed.platformFee,
    milestones: parsed.milestones,
    flags: { disputed: parsed.flags.disputed, released: parsed.flags.released, resolved: parsed.flags.resolved },
    trustline: { address: t.address, ...(t.symbol !== undefined ? { symbol: t.symbol } : {}), ...(t.decimals !== undefined ? { decimals: t.decimals } : {}) },
  };
  if (parsed.isActive !== undefined) escrow.isActive = parsed.isActive;
  if (parsed.createdAt !== undefined) escrow.createdAt = parsed.createdAt;
  return escrow;
}

function parseEscrow(raw: unknown, fallbackId?: string): Escrow {
  const r = EscrowSchema.safeParse(raw);
  if (!r.success)
    throw new EscrowError(
      'BAD_RESPONSE',
      `the provider returned an escrow of an unexpected shape: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return toEscrow(r.data, fallbackId);
}

/**
 * A client of the escrow provider's REST API (Trustless Work v1, single release).
 *
 * @example
 * const escrow = createEscrowClient({ baseUrl: `${devnet.url}/escrow`, apiKey: 'dev', passphrase: devnet.network.passphrase });
 * const { contractId } = await escrow.deployAndSend({ engagementId: 'cycle-1', ... }, treasury);
 * await escrow.run('fundEscrow', { contractId, signer: treasury.publicKey, amount: 50_000_000n }, treasury);
 */
export function createEscrowClient(options: EscrowClientOptions): EscrowClient {
  if (!options || typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl))
    throw new EscrowError('CONFIG', 'baseUrl must be an http(s) URL');
  if (typeof options.apiKey !== 'string' || !options.apiKey) throw new EscrowError('CONFIG', 'apiKey is required (sent as x-api-key)');
  if (typeof options.passphrase !== 'string' || !options.passphrase) throw new EscrowError('CONFIG', 'passphrase is required');
  const budgetOpts = options.budget ?? { requests: 50, windowMs: 60_000 };
  if (!Number.isInteger(budgetOpts.requests) || budgetOpts.requests < 1 || !(budgetOpts.windowMs > 0))
    throw new EscrowError('CONFIG', 'budget needs requests >= 1 and windowMs > 0');
  const maxRetries = options.maxRetries ?? 3;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new EscrowError('CONFIG', 'maxRetries must be a non-negative integer');
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const clock = options.clock ?? systemClock;
  const budget = new RequestBudget(budgetOpts.requests, budgetOpts.windowMs, clock);
  const passphrase = options.passphrase;

  /** One API call: budget, 429 backoff, JSON. Returns the HTTP status and parsed body. */
  async function request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    for (let attempt = 0; ; attempt++) {
      await budget.acquire();
      let res: Response;
      try {
        res = await doFetch(`${base}${path}`, {
          method,
          headers: { 'x-api-key': options.apiKey, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(60_000),
        });
      } catch (e) {
        throw new EscrowError('HTTP', `escrow provider unreachable (${method} ${path}): ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      if (res.status === 429) {
        if (attempt < maxRetries) {
          await clock.sleep(retryAfterMs(res.headers.get('retry-after'), attempt, clock.now()));
          continue;
        }
        const msg = providerMessage(parsed);
        throw new EscrowError('RATE_LIMITED', `escrow provider rate limit: ${msg ?? 'too many requests'} (after ${maxRetries} retries)`, {
          status: 429,
          ...(msg ? { providerMessage: msg } : {}),
        });
      }
      if (parsed === undefined && res.ok)
        throw new EscrowError('BAD_RESPONSE', `the provider answered ${method} ${path} with a body that is not JSON`, { status: res.status });
      return { status: res.status, body: parsed };
    }
  }

  function fail(status: number, body: unknown, what: string): never {
    const msg = providerMessage(body);
    const code = status === 404 || (msg !== undefined && /not found/i.test(msg) && /escrow/i.test(msg)) ? 'NOT_FOUND' : 'HTTP';
    throw new EscrowError(code, msg ? `${what}: ${msg}` : `${what}: HTTP ${status}`, { status, ...(msg ? { providerMessage: msg } : {}) });
  }

  async function write(path: string, body: Record<string, unknown>, what: string): Promise<string> {
    const r = await request('POST', path, body);
    if (r.status < 200 || r.status >= 300) fail(r.status, r.body, what);
    const parsed = WriteResponseSchema.safeParse(r.body);
    if (!parsed.success)
      throw new EscrowError(
        'BAD_RESPONSE',
        `${what}: unexpected response shape (${parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')})`,
        { status: r.status },
      );
    if (parsed.data.status === 'FAILED') {
      const msg = parsed.data.message ?? 'FAILED';
      throw new EscrowError('FAILED', `${what}: ${msg}`, { status: r.status, providerMessage: msg });
    }
    if (!parsed.data.unsignedTransaction) throw new EscrowError('BAD_RESPONSE', `${what}: the response has no unsignedTransaction`, { status: r.status });
    return parsed.data.unsignedTransaction;
  }

  const single = (endpoint: string) => `/escrow/single-release/${endpoint}`;

  function txHashOf(signedXdr: string): string | undefined {
    try {
      return TransactionBuilder.fromXDR(signedXdr, passphrase).hash().toString('hex');
    } catch {
      return undefined;
    }
  }

  const client: EscrowClient = {
    deploySingleRelease: async (input) =>
      write(
        '/deployer/single-release',
        {
          signer: input.signer,
          engagementId: input.engagementId,
          title: input.title,
          description: input.description,
          roles: { ...input.roles },
          amount: positive(input.amount, 'amount'),
          platformFee: input.platformFee,
          milestones: input.milestones.map((m) => ({ description: m.description })),
          trustline: { ...input.trustline },
        },
        'deploy single-release escrow',
      ),
    fundEscrow: async (input) =>
      write(single('fund-escrow'), { contractId: input.contractId, signer: input.signer, amount: positive(input.amount, 'amount') }, 'fund escrow'),
    changeMilestoneStatus: async (input) =>
      write(
        single('change-milestone-status'),
        {
          contractId: input.contractId,
          milestoneIndex: input.milestoneIndex,
          newStatus: input.newStatus,
          ...(input.newEvidence !== undefined ? { newEvidence: input.newEvidence } : {}),
          serviceProvider: input.serviceProvider,
        },
        'change milestone status',
      ),
    approveMilestone: async (input) =>
      write(single('approve-milestone'), { contractId: input.contractId, milestoneIndex: input.milestoneIndex, approver: input.approver }, 'approve milestone'),
    releaseFunds: async (input) => write(single('release-funds'), { contractId: input.contractId, releaseSigner: input.releaseSigner }, 'release funds'),
    disputeEscrow: async (input) => write(single('dispute-escrow'), { contractId: input.contractId, signer: input.signer }, 'dispute escrow'),
    resolveDispute: async (input) =>
      write(
        single('resolve-dispute'),
        {
          contractId: input.contractId,
          disputeResolver: input.disputeResolver,
          distributions: input.distributions.map((d) => ({ address: d.address, amount: positive(d.amount, 'distribution amount') })),
        },
        'resolve dispute',
      ),
    withdrawRemainingFunds: async (input) =>
      write(single('withdraw-remaining-funds'), { contractId: input.contractId, disputeResolver: input.disputeResolver }, 'withdraw remaining funds'),

    async getEscrows(contractIds) {
      if (!contractIds.length) return [];
      const q = new URLSearchParams();
      for (const id of contractIds) q.append('contractIds', id);
      const r = await request('GET', `/helper/get-escrow-by-contract-ids?${q.toString()}`);
      if (r.status < 200 || r.status >= 300) fail(r.status, r.body, 'get escrows');
      const list = Array.isArray(r.body)
        ? r.body
        : r.body && typeof r.body === 'object' && Array.isArray((r.body as { escrows?: unknown }).escrows)
          ? (r.body as { escrows: unknown[] }).escrows
          : undefined;
      if (!list) throw new EscrowError('BAD_RESPONSE', 'get escrows: the provider did not answer an array of escrows', { status: r.status });
      return list.map((e) => parseEscrow(e));
    },

    async sendTransaction(signedXdr) {
      if (typeof signedXdr !== 'string' || !signedXdr) throw new EscrowError('CONFIG', 'signedXdr must be a base64 transaction envelope');
      const r = await request('POST', '/helper/send-transaction', { signedXdr });
      const parsed = SendResponseSchema.safeParse(r.body);
      if (!parsed.success) {
        if (r.status < 200 || r.status >= 300) fail(r.status, r.body, 'send transaction');
        throw new EscrowError(
          'BAD_RESPONSE',
          `send transaction: unexpected response shape (${parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')})`,
          { status: r.status },
        );
      }
      const d = parsed.data;
      const out: SendResult = { status: d.status, message: d.message };
      if (d.contractId !== undefined) out.contractId = d.contractId;
      if (d.escrow !== undefined && d.escrow !== null) out.escrow = parseEscrow(d.escrow, d.contractId);
      const hash = d.txHash ?? d.hash ?? txHashOf(signedXdr);
      if (hash) out.txHash = hash;
      return out;
    },

    async deployAndSend(input, signer) {
      const unsigned = await client.deploySingleRelease({ ...input, signer: signer.publicKey });
      const signed = await signer.signTransaction(unsigned, passphrase);
      const sent = await client.sendTransaction(signed);
      if (sent.status !== 'SUCCESS') throw new EscrowError('FAILED', `deploy single-release escrow: ${sent.message}`, { providerMessage: sent.message });
      if (!sent.contractId) throw new EscrowError('BAD_RESPONSE', 'deploy single-release escrow: the provider did not return the contractId');
      return { contractId: sent.contractId, txHash: sent.txHash ?? '', ...(sent.escrow ? { escrow: sent.escrow } : {}) };
    },

    async run(op, input, signer) {
      const call = client[op] as (i: typeof input) => Promise<string>;
      if (typeof call !== 'function') throw new EscrowError('CONFIG', `unknown escrow operation ${String(op)}`);
      const unsigned = await call(input);
      const signed = await signer.signTransaction(unsigned, passphrase);
      const sent = await client.sendTransaction(signed);
      if (sent.status !== 'SUCCESS') throw new EscrowError('FAILED', `${String(op)}: ${sent.message}`, { providerMessage: sent.message });
      return { txHash: sent.txHash ?? '', message: sent.message };
    },
  };
  return client;
}
