import { Account, Address, Operation, StrKey, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import { z } from 'zod';
import { formatAmount, parseAmount } from '@farebox/protocol';
import { MalformedXdr, type Chain, type TxRecord } from '../core.js';
import { addressVal, i128Val, stringVal } from '../xdrutil.js';
import {
  decodeEscrow,
  deploySalt,
  ESCROW_ERRORS,
  ESCROW_KEY,
  escrowDeployerContract,
  escrowContract,
  escrowIdsInStorage,
  LOCAL_ESCROW_DEPLOYER_ID,
  toScVal,
  type EscrowErrorNumber,
  type EscrowState,
} from './contract.js';

export interface EscrowApiOptions {
  /** The only accepted `x-api-key`; any non-empty key when omitted. */
  apiKey?: string;
  /** Requests per window per API key (default 50 per 60,000 ms, like Trustless Work); `false` disables the limit. */
  rateLimit?: { requests: number; windowMs: number } | false;
}

export interface EscrowReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const GAccount = z.string().refine((s) => StrKey.isValidEd25519PublicKey(s), 'must be a valid Stellar account (G...)');
const CContract = z.string().refine((s) => StrKey.isValidContract(s), 'must be a valid contract id (C...)');
const Amount = z.union([z.number(), z.string()]).transform((v, ctx) => {
  try {
    const units = parseAmount(v);
    if (units <= 0n) throw new Error('must be greater than zero');
    return units;
  } catch (e) {
    ctx.addIssue({
      code: 'custom',
      message: e instanceof Error && /greater/.test(e.message) ? 'must be greater than zero' : 'must be a positive USDC amount with at most 7 decimals',
    });
    return z.NEVER;
  }
});
const Index = z.union([z.string(), z.number()]).transform((v) => String(v));
const Roles = z.object({
  approver: GAccount,
  serviceProvider: GAccount,
  platformAddress: GAccount,
  releaseSigner: GAccount,
  disputeResolver: GAccount,
  receiver: GAccount,
});
const Distributions = z
  .array(z.union([z.object({ address: GAccount, amount: Amount }), z.tuple([GAccount, Amount])]))
  .min(1, 'at least one distribution is required')
  .transform((list) => list.map((d) => (Array.isArray(d) ? { address: d[0], amount: d[1] } : d)));

const Deploy = z.object({
  signer: GAccount,
  engagementId: z.string().min(1).max(128),
  title: z.string().min(1).max(256),
  description: z.string().max(2048),
  roles: Roles,
  amount: Amount,
  platformFee: z
    .union([z.number(), z.string().transform(Number)])
    .refine(
      (n) => Number.isFinite(n) && n >= 0 && n <= 99 && Number.isInteger(Math.round(n * 100)) && Math.abs(n * 100 - Math.round(n * 100)) < 1e-9,
      'must be a percentage between 0 and 99 with at most 2 decimals',
    ),
  milestones: z
    .array(z.object({ description: z.string().min(1).max(1024) }))
    .min(1, 'at least one milestone is required')
    .max(50, 'at most 50 milestones'),
  trustline: z.object({ address: z.string().min(1), symbol: z.string().optional(), decimals: z.number().int().optional() }),
});
const Fund = z.object({ contractId: CContract, signer: GAccount, amount: Amount });
const ChangeStatus = z.object({
  contractId: CContract,
  milestoneIndex: Index,
  newStatus: z.string().min(1).max(128),
  newEvidence: z.string().max(2048).optional(),
  serviceProvider: GAccount,
});
const Approve = z.object({ contractId: CContract, milestoneIndex: Index, approver: GAccount });
const Release = z.object({ contractId: CContract, releaseSigner: GAccount });
const Dispute = z.object({ contractId: CContract, signer: GAccount });
const Resolve = z.object({ contractId: CContract, disputeResolver: GAccount, distributions: Distributions });
const Withdraw = z.object({ contractId: CContract, disputeResolver: GAccount, distributions: Distributions.optional() });
const Send = z.object({ signedXdr: z.string().min(1) });

const bad = (message: string, extra: Record<string, unknown> = {}): EscrowReply => ({ status: 400, body: { message, ...extra } });

function issues(e: z.ZodError): string {
  return e.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
}

/** Human units as the API prints them (a JSON number; exact for amounts below 2^53 base units). */
const human = (units: bigint): number => Number(formatAmount(units, { trim: true }));

/**
 * The Trustless Work REST API (single release) served by the devnet: each
 * write endpoint answers an unsigned Soroban transaction for the role's
 * account; `/helper/send-transaction` submits the signed one to the chain.
 */
export function createEscrowApi(chain: Chain, opts: EscrowApiOptions & { submit: (signedXdr: string) => Promise<{ refused: string } | TxRecord> }) {
  chain.registerContract(escrowDeployerContract(chain.networkId));
  for (const id of escrowIdsInStorage(chain.data.values())) if (!chain.contracts.has(id)) chain.registerContract(escrowContract(id));
  const usdcContract = chain.usdc.contractId(chain.passphrase);
  const limit = opts.rateLimit === false ? undefined : (opts.rateLimit ?? { requests: 50, windowMs: 60_000 });
  const hits = new Map<string, number[]>();

  function readEscrow(contractId: string): EscrowState | undefined {
    const e = chain.data.get(`${contractId}|${ESCROW_KEY.toXDR('base64')}`);
    return e ? decodeEscrow(xdr.ScVal.fromXDR(e.val, 'base64')) : undefined;
  }

  function contractBalance(contractId: string): bigint {
    const key = xdr.ScVal.scvVec([xdr.ScVal.scvSymbol('Balance'), addressVal(contractId)]).toXDR('base64');
    const e = chain.data.get(`${usdcContract}|${key}`);
    if (!e) return 0n;
    const p = xdr.ScVal.fromXDR(e.val, 'base64').i128();
    return (BigInt.asIntN(64, BigInt(p.hi().toString())) << 64n) | BigInt(p.lo().toString());
  }

  function escrowJson(contractId: string, s: EscrowState) {
    return {
      contractId,
      engagementId: s.engagementId,
      title: s.title,
      description: s.description,
      roles: s.roles,
      amount: human(s.amount),
      balance: human(contractBalance(contractId)),
      platformFee: s.platformFeeBps / 100,
      milestones: s.milestones.map((m) => ({ description: m.description, status: m.status, evidence: m.evidence, approved: m.approved })),
      flags: s.flags,
      trustline: s.trustline,
      signer: s.deployer,
      type: 'single-release',
      isActive: true,
      createdAt: new Date(Number(s.createdAt) * 1000).toISOString(),
    };
  }

  /** Builds, simulates and assembles the unsigned transaction for one contract call by `source`. */
  function unsigned(source: string, contractId: string, fn: string, args: xdr.ScVal[]): EscrowReply {
    const acc = chain.accounts.get(source);
    if (!acc) return bad(`Account ${source} not found on the network; fund it first`);
    const func = xdr.HostFunction.hostFunctionTypeInvokeContract(
      new xdr.InvokeContractArgs({ contractAddress: new Address(contractId).toScAddress(), functionName: fn, args }),
    );
    const build = (fee: bigint, auth: xdr.SorobanAuthorizationEntry[], data?: xdr.SorobanTransactionData) => {
      const b = new TransactionBuilder(new Account(source, acc.seq.toString()), { fee: fee.toString(), networkPassphrase: chain.passphrase })
        .addOperation(Operation.invokeHostFunction({ func, auth }))
        .setTimeout(300);
      if (data) b.setSorobanData(data);
      return b.build();
    };
    const sim = chain.simulate(build(100n, []).toXDR());
    if (!sim.ok) {
      const m = /Error\(Contract, #(\d+)\)/.exec(sim.error);
      const n = m ? (Number(m[1]) as EscrowErrorNumber) : undefined;
      if (n && ESCROW_ERRORS[n]) return bad(ESCROW_ERRORS[n]);
      return bad(`The escrow call was refused by the contract: ${sim.error.split('\n')[0]}`);
    }
    const tx = build(100n + sim.resourceFee, sim.auth, sim.transactionData);
    return { status: 200, body: { status: 'SUCCESS', unsignedTransaction: tx.toXDR() } };
  }

  function requireEscrow(contractId: string): EscrowState | EscrowReply {
    return readEscrow(contractId) ?? bad(ESCROW_ERRORS[1]);
  }
  const isReply = (v: EscrowState | EscrowReply): v is EscrowReply => 'status' in v && 'body' in v;

  function distributionArg(list: Array<{ address: string; amount: bigint }>): xdr.ScVal {
    return xdr.ScVal.scvVec(list.map((d) => xdr.ScVal.scvVec([addressVal(d.address), i128Val(d.amount)])));
  }

  function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> | EscrowReply {
    const r = schema.safeParse(body);
    if (!r.success) return bad(issues(r.error));
    return r.data;
  }

  const writes: Record<string, (body: unknown) => EscrowReply> = {
    'fund-escrow': (body) => {
      const b = parse(Fund, body);
      if ('status' in b && 'body' in b) return b;
      const s = requireEscrow(b.contractId);
      if (isReply(s)) return s;
      if (s.flags.released) return bad(ESCROW_ERRORS[3]);
      return unsigned(b.signer, b.contractId, 'fund_escrow', [addressVal(b.signer), i128Val(b.amount)]);
    },
    'change-milestone-status': (body) => {
      const b = parse(ChangeStatus, body);
      if ('status' in b && 'body' in b) return b;
      const s = requireEscrow(b.contractId);
      if (isReply(s)) return s;
      return unsigned(b.serviceProvider, b.contractId, 'change_milestone_status', [
        stringVal(b.milestoneIndex),
        stringVal(b.newStatus),
        b.newEvidence === undefined ? xdr.ScVal.scvVoid() : stringVal(b.newEvidence),
        addressVal(b.serviceProvider),
      ]);
    },
    'approve-milestone': (body) => {
      const b = parse(Approve, body);
      if ('status' in b && 'body' in b) return b;
      const s = requireEscrow(b.contractId);
      if (isReply(s)) return s;
      return unsigned(b.approver, b.contractId, 'approve_milestone', [stringVal(b.milestoneIndex), addressVal(b.approver)]);
    },
    'release-funds': (body) => {
      const b = parse(Release, body);
      if ('status' in b && 'body' in b) return b;
      const s = requireEscrow(b.contractId);
      if (isReply(s)) return s;
      return unsigned(b.releaseSigner, b.contractId, 'release_funds', [addressVal(b.releaseSigner)]);
    },
    'dispute-escrow': (body) => {
      const b = parse(Dispute, body);
      if ('status' in b && 'body' in b) return b;
      const s = requireEscrow(b.contractId);
      if (isReply(s)) return s;
      return unsigned(b.signer, b.contractId, 'dispute_escrow', [addressVal(b.signer)]);
    },
    'resolve-dispute': (body) => {
      const b = parse(Resolve, body);
      if ('status' in b && 'body' in b) return b;
      const s = requireEscrow(b.contractId);
      if (isReply(s)) return s;
      const balance = contractBalance(b.contractId);
      const sum = b.distributions.reduce((a, d) => a + d.amount, 0n);
      if (b.disputeResolver === s.roles.disputeResolver && s.flags.disputed && sum !== balance) {
        return bad(
          `${ESCROW_ERRORS[15]}: the distributions sum to ${formatAmount(sum, { trim: true })} but the balance is ${formatAmount(balance, { trim: true })}`,
        );
      }
      return unsigned(b.disputeResolver, b.contractId, 'resolve_dispute', [addressVal(b.disputeResolver), distributionArg(b.distributions)]);
    },
    'withdraw-remaining-funds': (body) => {
      const b = parse(Withdraw, body);
      if ('status' in b && 'body' in b) return b;
      const s = requireEscrow(b.contractId);
      if (isReply(s)) return s;
      const balance = contractBalance(b.contractId);
      const distributions = b.distributions ?? [{ address: b.disputeResolver, amount: balance }];
      return unsigned(b.disputeResolver, b.contractId, 'withdraw_remaining_funds', [addressVal(b.disputeResolver), distributionArg(distributions)]);
    },
  };

  function deploy(body: unknown): EscrowReply {
    const b = parse(Deploy, body);
    if ('status' in b && 'body' in b) return b;
    const t = b.trustline.address;
    if (t !== usdcContract && t !== chain.usdcIssuer)
      return bad(`Unsupported trustline ${t}: the devnet escrows hold USDC (issuer ${chain.usdcIssuer}, asset contract ${usdcContract})`);
    const acc = chain.accounts.get(b.signer);
    if (!acc) return bad(`Account ${b.signer} not found on the network; fund it first`);
    const state: EscrowState = {
      engagementId: b.engagementId,
      title: b.title,
      description: b.description,
      roles: b.roles,
      amount: b.amount,
      platformFeeBps: Math.round(b.platformFee * 100),
      milestones: b.milestones.map((m) => ({ description: m.description, status: 'pending', evidence: '', approved: false })),
      flags: { disputed: false, released: false, resolved: false },
      trustline: {
        address: t,
        ...(b.trustline.symbol !== undefined ? { symbol: b.trustline.symbol } : {}),
        ...(b.trustline.decimals !== undefined ? { decimals: b.trustline.decimals } : {}),
      },
      token: usdcContract,
      deployer: b.signer,
      createdAt: BigInt(Math.max(Math.floor(Date.now() / 1000), chain.latest.closeTime)),
    };
    const init = toScVal({
      engagement_id: state.engagementId,
      title: state.title,
      description: state.description,
      roles: { ...state.roles },
      amount: state.amount,
      platform_fee: state.platformFeeBps,
      milestones: state.milestones.map((m) => ({ ...m })),
      flags: { ...state.flags },
      trustline: { ...state.trustline },
      token: state.token,
      deployer: state.deployer,
      created_at: state.createdAt,
    });
    const salt = deploySalt(b.engagementId, acc.seq + 1n);
    return unsigned(b.signer, LOCAL_ESCROW_DEPLOYER_ID, 'deploy', [addressVal(b.signer), xdr.ScVal.scvBytes(salt), init]);
  }

  async function send(body: unknown): Promise<EscrowReply> {
    const b = parse(Send, body);
    if ('status' in b && 'body' in b) return b;
    let deploying = false;
    try {
      const p = chain.parse(b.signedXdr, false);
      const op = p.tx.operations()[0];
      const hf = op?.body().switch().name === 'invokeHostFunction' ? op.body().invokeHostFunctionOp().hostFunction() : undefined;
      deploying =
        hf?.switch().name === 'hostFunctionTypeInvokeContract' &&
        Address.fromScAddress(hf.invokeContract().contractAddress()).toString() === LOCAL_ESCROW_DEPLOYER_ID;
    } catch (e) {
      if (e instanceof MalformedXdr) return { status: 400, body: { status: 'FAILED', message: `Invalid transaction XDR: ${e.message}` } };
      throw e;
    }
    let out: { refused: string } | TxRecord;
    try {
      out = await opts.submit(b.signedXdr);
    } catch (e) {
      if (e instanceof MalformedXdr) return { status: 400, body: { status: 'FAILED', message: `Invalid transaction XDR: ${e.message}` } };
      throw e;
    }
    if ('refused' in out) return { status: 400, body: { status: 'FAILED', message: `The transaction was refused by the network: ${out.refused}` } };
    if (!out.successful) {
      const ops = out.resultCodes.operations.filter((c) => c !== 'op_success');
      return {
        status: 400,
        body: {
          status: 'FAILED',
          message: `The transaction failed: ${out.resultCodes.transaction}${ops.length ? ` (${ops.join(', ')})` : ''}`,
          txHash: out.hash,
        },
      };
    }
    if (deploying && out.returnValueXdr) {
      const contractId = Address.fromScVal(xdr.ScVal.fromXDR(out.returnValueXdr, 'base64')).toString();
      const s = readEscrow(contractId);
      return {
        status: 200,
        body: {
          status: 'SUCCESS',
          message: 'The escrow has been successfully deployed',
          contractId,
          escrow: s ? escrowJson(contractId, s) : undefined,
          txHash: out.hash,
        },
      };
    }
    return { status: 200, body: { status: 'SUCCESS', message: 'The transaction has been successfully sent to the Stellar network', txHash: out.hash } };
  }

  function getEscrows(query: URLSearchParams): EscrowReply {
    const ids = [...query.getAll('contractIds'), ...query.getAll('contractIds[]')]
      .flatMap((v) => v.split(','))
      .map((v) => v.trim())
      .filter(Boolean);
    if (!ids.length) return bad('contractIds is required');
    if (ids.length > 50) return bad('at most 50 contractIds per request');
    const badId = ids.find((id) => !StrKey.isValidContract(id));
    if (badId) return bad(`Invalid contract id ${badId}`);
    const out = [];
    for (const id of ids) {
      const s = readEscrow(id);
      if (s) out.push(escrowJson(id, s));
    }
    return { status: 200, body: out };
  }

  function rateLimited(key: string): EscrowReply | undefined {
    if (!limit) return undefined;
    const now = Date.now();
    const list = (hits.get(key) ?? []).filter((t) => t > now - limit.windowMs);
    if (list.length >= limit.requests) {
      hits.set(key, list);
      const retry = Math.max(1, Math.ceil((list[0]! + limit.windowMs - now) / 1000));
      return {
        status: 429,
        body: { message: `Too many requests: the limit is ${limit.requests} requests per ${limit.windowMs / 1000} s; retry in ${retry} s` },
        headers: { 'retry-after': String(retry) },
      };
    }
    list.push(now);
    hits.set(key, list);
    if (hits.size > 10_000) for (const [k, v] of hits) if (!v.some((t) => t > now - limit.windowMs)) hits.delete(k);
    return undefined;
  }

  /** Answers one request at `path` (relative to the API root, e.g. `/helper/send-transaction`). */
  async function handle(
    method: string,
    path: string,
    query: URLSearchParams,
    headers: Record<string, string | string[] | undefined>,
    readJson: () => Promise<unknown>,
  ): Promise<EscrowReply> {
    const rawKey = headers['x-api-key'];
    const key = Array.isArray(rawKey) ? rawKey[0] : rawKey;
    if (!key) return { status: 401, body: { message: 'Unauthorized: the x-api-key header is required' } };
    if (opts.apiKey !== undefined && key !== opts.apiKey) return { status: 401, body: { message: 'Unauthorized: invalid API key' } };
    const limited = rateLimited(key);
    if (limited) return limited;
    if (method === 'GET' && path === '/helper/get-escrow-by-contract-ids') return getEscrows(query);
    if (method !== 'POST') return { status: 404, body: { message: `Cannot ${method} ${path}` } };
    let body: unknown;
    try {
      body = await readJson();
    } catch {
      return bad('The request body must be JSON');
    }
    if (path === '/deployer/single-release' || path === '/deployer/single-release/v1') return deploy(body);
    if (path === '/helper/send-transaction') return send(body);
    const m = /^\/escrow\/single-release(?:\/v1)?\/([a-z-]+)$/.exec(path);
    const write = m ? writes[m[1]!] : undefined;
    if (write) return write(body);
    return { status: 404, body: { message: `Cannot POST ${path}` } };
  }

  return { handle, readEscrow, escrowJson };
}
