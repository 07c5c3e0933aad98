import { Address, StrKey, xdr } from '@stellar/stellar-sdk';
import { splitFee } from '@farebox/protocol';
import { argAddress, argI128, argString, HostError, type DevnetContract, type HostContext } from '../contracts.js';
import { addressVal, i128Val, sha256, stringVal, symbolVal } from '../xdrutil.js';

/** The escrow deployer (factory) contract of the devnet, derived from a fixed label. */
export const LOCAL_ESCROW_DEPLOYER_ID: string = StrKey.encodeContract(sha256('farebox-devnet:escrow-deployer'));

/**
 * Contract errors of the devnet single-release escrow, `Error(Contract, #n)`,
 * with the messages the Trustless Work API answers (HTTP 400 `{ message }`).
 */
export const ESCROW_ERRORS = {
  1: 'Escrow not found',
  2: 'The escrow has already been initialized',
  3: 'The escrow funds have been released',
  4: 'Only the release signer can release the escrow earnings',
  5: 'Only the service provider can change the milestone status',
  6: 'Only the approver can approve milestones',
  7: 'Invalid milestone index',
  8: 'All milestones must be approved before releasing the funds',
  9: 'The escrow is in dispute',
  10: 'The escrow balance is zero',
  11: 'Only a party of the escrow (approver, service provider, receiver, release signer or platform) can start a dispute',
  12: 'The escrow is already in dispute',
  13: 'Only the dispute resolver can execute this function',
  14: 'The escrow is not in dispute',
  15: 'The sum of the distributions must equal the escrow balance',
  16: 'The escrow must be released, resolved or in dispute to withdraw the remaining funds',
  17: 'The signer does not have enough USDC to fund the escrow',
  18: 'The amount must be greater than zero',
  19: 'The USDC transfer failed (does the destination have a USDC trustline?)',
  20: 'The dispute has already been resolved',
  21: 'Each distribution amount must be greater than zero',
} as const;
export type EscrowErrorNumber = keyof typeof ESCROW_ERRORS;

const fault = (n: EscrowErrorNumber) => new HostError('Contract', n);

export interface EscrowRolesState {
  approver: string;
  serviceProvider: string;
  platformAddress: string;
  releaseSigner: string;
  disputeResolver: string;
  receiver: string;
}

/** What an escrow contract keeps in its storage (key `Escrow`). */
export interface EscrowState {
  engagementId: string;
  title: string;
  description: string;
  roles: EscrowRolesState;
  amount: bigint;
  /** Platform fee in basis points (percent x 100). */
  platformFeeBps: number;
  milestones: Array<{ description: string; status: string; evidence: string; approved: boolean }>;
  flags: { disputed: boolean; released: boolean; resolved: boolean };
  trustline: { address: string; symbol?: string; decimals?: number };
  /** The USDC asset contract the escrow holds. */
  token: string;
  deployer: string;
  createdAt: bigint;
}

export const ESCROW_KEY = xdr.ScVal.scvSymbol('Escrow');

// --- a small, lossless mapping between plain values and ScVal (strkeys become addresses) ---
type Plain = string | bigint | number | boolean | undefined | Plain[] | { [k: string]: Plain };

export function toScVal(v: Plain): xdr.ScVal {
  if (v === undefined) return xdr.ScVal.scvVoid();
  if (typeof v === 'string') return StrKey.isValidEd25519PublicKey(v) || StrKey.isValidContract(v) ? addressVal(v) : stringVal(v);
  if (typeof v === 'bigint') return i128Val(v);
  if (typeof v === 'number') return xdr.ScVal.scvU32(v);
  if (typeof v === 'boolean') return xdr.ScVal.scvBool(v);
  if (Array.isArray(v)) return xdr.ScVal.scvVec(v.map(toScVal));
  const keys = Object.keys(v)
    .filter((k) => v[k] !== undefined)
    .sort();
  return xdr.ScVal.scvMap(keys.map((k) => new xdr.ScMapEntry({ key: symbolVal(k), val: toScVal(v[k]) })));
}

export function fromScVal(v: xdr.ScVal): Plain {
  switch (v.switch().name) {
    case 'scvVoid':
      return undefined;
    case 'scvString':
      return argString(v);
    case 'scvSymbol':
      return String(v.sym());
    case 'scvAddress':
      return argAddress(v);
    case 'scvI128':
      return argI128(v);
    case 'scvU64':
      return BigInt(v.u64().toString());
    case 'scvU32':
      return v.u32();
    case 'scvBool':
      return v.b();
    case 'scvVec':
      return (v.vec() ?? []).map(fromScVal);
    case 'scvMap': {
      const out: { [k: string]: Plain } = {};
      for (const e of v.map() ?? []) out[String(e.key().sym())] = fromScVal(e.val());
      return out;
    }
    default:
      throw new HostError('Value', 'UnexpectedType');
  }
}

export function encodeEscrow(s: EscrowState): xdr.ScVal {
  return toScVal({
    engagement_id: s.engagementId,
    title: s.title,
    description: s.description,
    roles: { ...s.roles },
    amount: s.amount,
    platform_fee: s.platformFeeBps,
    milestones: s.milestones.map((m) => ({ ...m })),
    flags: { ...s.flags },
    trustline: { ...s.trustline },
    token: s.token,
    deployer: s.deployer,
    created_at: s.createdAt,
  });
}

export function decodeEscrow(v: xdr.ScVal): EscrowState {
  const o = fromScVal(v) as Record<string, never>;
  const m = o as unknown as {
    engagement_id: string;
    title: string;
    description: string;
    roles: EscrowRolesState;
    amount: bigint;
    platform_fee: number;
    milestones: EscrowState['milestones'];
    flags: EscrowState['flags'];
    trustline: EscrowState['trustline'];
    token: string;
    deployer: string;
    created_at: bigint;
  };
  return {
    engagementId: m.engagement_id,
    title: m.title,
    description: m.description,
    roles: m.roles,
    amount: m.amount,
    platformFeeBps: m.platform_fee,
    milestones: m.milestones,
    flags: m.flags,
    trustline: m.trustline,
    token: m.token,
    deployer: m.deployer,
    createdAt: m.created_at,
  };
}

/** The escrow contract id a deploy creates: Soroban's contract-id preimage from the deployer address and a salt. */
export function escrowContractId(networkId: Buffer, deployer: string, salt: Buffer): string {
  const preimage = xdr.HashIdPreimage.envelopeTypeContractId(
    new xdr.HashIdPreimageContractId({
      networkId,
      contractIdPreimage: xdr.ContractIdPreimage.contractIdPreimageFromAddress(
        new xdr.ContractIdPreimageFromAddress({ address: new Address(deployer).toScAddress(), salt }),
      ),
    }),
  );
  return StrKey.encodeContract(sha256(preimage.toXDR()));
}

/** The salt of a deploy: sha256 of engagement id and the deploying transaction's sequence number. */
export const deploySalt = (engagementId: string, seq: bigint): Buffer => sha256(`${engagementId}:${seq}`);

function load(ctx: HostContext): EscrowState {
  const v = ctx.getData(ESCROW_KEY);
  if (!v) throw fault(1);
  return decodeEscrow(v);
}

function usdcBalance(ctx: HostContext, token: string, who: string): bigint {
  try {
    return argI128(ctx.call(token, 'balance', [addressVal(who)]));
  } catch (e) {
    if (e instanceof HostError) return 0n;
    throw e;
  }
}

function transfer(ctx: HostContext, token: string, from: string, to: string, amount: bigint): void {
  if (amount === 0n) return;
  try {
    ctx.call(token, 'transfer', [addressVal(from), addressVal(to), i128Val(amount)]);
  } catch (e) {
    if (e instanceof HostError && e.type === 'Contract') throw fault(19);
    throw e;
  }
}

function milestoneIndex(s: EscrowState, raw: string): number {
  if (!/^\d{1,3}$/.test(raw)) throw fault(7);
  const i = Number(raw);
  if (i >= s.milestones.length) throw fault(7);
  return i;
}

function distributionsArg(v: xdr.ScVal | undefined): Array<[string, bigint]> {
  if (v?.switch().name !== 'scvVec') throw new HostError('Value', 'UnexpectedType');
  return (v.vec() ?? []).map((pair) => {
    const items = pair.switch().name === 'scvVec' ? (pair.vec() ?? []) : [];
    if (items.length !== 2) throw new HostError('Value', 'UnexpectedType');
    return [argAddress(items[0]), argI128(items[1])];
  });
}

function payOut(ctx: HostContext, s: EscrowState, distributions: Array<[string, bigint]>): bigint {
  const balance = usdcBalance(ctx, s.token, ctx.contractId);
  let sum = 0n;
  for (const [, amount] of distributions) {
    if (amount <= 0n) throw fault(21);
    sum += amount;
  }
  if (sum !== balance) throw fault(15);
  for (const [to, amount] of distributions) transfer(ctx, s.token, ctx.contractId, to, amount);
  return balance;
}

const distributionsVal = (d: Array<[string, bigint]>) => xdr.ScVal.scvVec(d.map(([a, n]) => xdr.ScVal.scvVec([addressVal(a), i128Val(n)])));

/** One single-release escrow, hosted natively by the devnet (Trustless Work semantics). */
export function escrowContract(id: string): DevnetContract {
  return {
    id,
    kind: 'wasm',
    label: 'Single-release escrow (Trustless Work interface)',
    invoke(ctx, fn, args) {
      const save = (s: EscrowState) => ctx.putData(ESCROW_KEY, encodeEscrow(s));
      switch (fn) {
        case '__constructor': {
          if (ctx.getData(ESCROW_KEY)) throw fault(2);
          const s = decodeEscrow(args[0] ?? xdr.ScVal.scvVoid());
          save(s);
          ctx.emit(
            [symbolVal('tw_init'), stringVal(s.engagementId)],
            toScVal({ amount: s.amount, platform_fee: s.platformFeeBps, receiver: s.roles.receiver }),
          );
          return xdr.ScVal.scvVoid();
        }
        case 'get_escrow':
          return encodeEscrow(load(ctx));
        case 'fund_escrow': {
          const signer = argAddress(args[0]);
          const amount = argI128(args[1]);
          const s = load(ctx);
          ctx.requireAuth(signer);
          if (amount <= 0n) throw fault(18);
          if (s.flags.released) throw fault(3);
          if (s.flags.resolved) throw fault(20);
          if (usdcBalance(ctx, s.token, signer) < amount) throw fault(17);
          transfer(ctx, s.token, signer, ctx.contractId, amount);
          ctx.emit([symbolVal('tw_fund'), addressVal(signer)], i128Val(amount));
          return xdr.ScVal.scvVoid();
        }
        case 'change_milestone_status': {
          const index = argString(args[0]);
          const status = argString(args[1]);
          const evidence = args[2] && args[2].switch().name !== 'scvVoid' ? argString(args[2]) : undefined;
          const provider = argAddress(args[3]);
          const s = load(ctx);
          ctx.requireAuth(provider);
          if (provider !== s.roles.serviceProvider) throw fault(5);
          if (s.flags.released) throw fault(3);
          const i = milestoneIndex(s, index);
          const m = s.milestones[i]!;
          m.status = status;
          if (evidence !== undefined) m.evidence = evidence;
          save(s);
          ctx.emit([symbolVal('tw_ms_change'), addressVal(provider)], toScVal({ index: i, status }));
          return xdr.ScVal.scvVoid();
        }
        case 'approve_milestone': {
          const index = argString(args[0]);
          const approver = argAddress(args[1]);
          const s = load(ctx);
          ctx.requireAuth(approver);
          if (approver !== s.roles.approver) throw fault(6);
          if (s.flags.released) throw fault(3);
          const i = milestoneIndex(s, index);
          s.milestones[i]!.approved = true;
          save(s);
          ctx.emit([symbolVal('tw_ms_approve'), addressVal(approver)], xdr.ScVal.scvU32(i));
          return xdr.ScVal.scvVoid();
        }
        case 'release_funds': {
          const signer = argAddress(args[0]);
          const s = load(ctx);
          ctx.requireAuth(signer);
          if (signer !== s.roles.releaseSigner) throw fault(4);
          if (s.flags.released) throw fault(3);
          if (s.flags.resolved) throw fault(20);
          if (s.flags.disputed) throw fault(9);
          if (!s.milestones.every((m) => m.approved)) throw fault(8);
          const balance = usdcBalance(ctx, s.token, ctx.contractId);
          if (balance === 0n) throw fault(10);
          const { fee, net } = splitFee(balance, BigInt(s.platformFeeBps));
          transfer(ctx, s.token, ctx.contractId, s.roles.platformAddress, fee);
          transfer(ctx, s.token, ctx.contractId, s.roles.receiver, net);
          s.flags.released = true;
          save(s);
          ctx.emit([symbolVal('tw_release'), addressVal(signer)], toScVal({ fee, net, platform: s.roles.platformAddress, receiver: s.roles.receiver }));
          return xdr.ScVal.scvVoid();
        }
        case 'dispute_escrow': {
          const signer = argAddress(args[0]);
          const s = load(ctx);
          ctx.requireAuth(signer);
          const r = s.roles;
          if (![r.approver, r.serviceProvider, r.receiver, r.releaseSigner, r.platformAddress].includes(signer)) throw fault(11);
          if (s.flags.released) throw fault(3);
          if (s.flags.resolved) throw fault(20);
          if (s.flags.disputed) throw fault(12);
          if (usdcBalance(ctx, s.token, ctx.contractId) === 0n) throw fault(10);
          s.flags.disputed = true;
          save(s);
          ctx.emit([symbolVal('tw_dispute'), addressVal(signer)], xdr.ScVal.scvBool(true));
          return xdr.ScVal.scvVoid();
        }
        case 'resolve_dispute': {
          const resolver = argAddress(args[0]);
          const distributions = distributionsArg(args[1]);
          const s = load(ctx);
          ctx.requireAuth(resolver);
          if (resolver !== s.roles.disputeResolver) throw fault(13);
          if (s.flags.resolved) throw fault(20);
          if (!s.flags.disputed) throw fault(14);
          payOut(ctx, s, distributions);
          s.flags.resolved = true;
          s.flags.disputed = false;
          save(s);
          ctx.emit([symbolVal('tw_disp_resolve'), addressVal(resolver)], distributionsVal(distributions));
          return xdr.ScVal.scvVoid();
        }
        case 'withdraw_remaining_funds': {
          const resolver = argAddress(args[0]);
          const distributions = distributionsArg(args[1]);
          const s = load(ctx);
          ctx.requireAuth(resolver);
          if (resolver !== s.roles.disputeResolver) throw fault(13);
          if (!s.flags.released && !s.flags.resolved && !s.flags.disputed) throw fault(16);
          if (usdcBalance(ctx, s.token, ctx.contractId) === 0n) throw fault(10);
          payOut(ctx, s, distributions);
          if (s.flags.disputed) {
            s.flags.disputed = false;
            s.flags.resolved = true;
            save(s);
          }
          ctx.emit([symbolVal('tw_withdraw'), addressVal(resolver)], distributionsVal(distributions));
          return xdr.ScVal.scvVoid();
        }
        default:
          throw new HostError('WasmVm', 'MissingValue');
      }
    },
  };
}

/**
 * The escrow deployer: `deploy(deployer, salt, escrow)` creates a single-release
 * escrow contract at the id derived from (deployer, salt), runs its constructor
 * and returns its address.
 */
export function escrowDeployerContract(networkId: Buffer): DevnetContract {
  return {
    id: LOCAL_ESCROW_DEPLOYER_ID,
    kind: 'wasm',
    label: 'Escrow deployer (single-release)',
    invoke(ctx, fn, args) {
      if (fn !== 'deploy') throw new HostError('WasmVm', 'MissingValue');
      const deployer = argAddress(args[0]);
      const salt = args[1];
      if (salt?.switch().name !== 'scvBytes' || salt.bytes().length !== 32) throw new HostError('Value', 'UnexpectedType');
      ctx.requireAuth(deployer);
      const id = escrowContractId(networkId, deployer, Buffer.from(salt.bytes()));
      ctx.deploy(escrowContract(id));
      ctx.call(id, '__constructor', [args[2] ?? xdr.ScVal.scvVoid()]);
      return addressVal(id);
    },
  };
}

/** Registers the escrow contracts found in the chain's storage (after loading a data directory). */
export function escrowIdsInStorage(data: Iterable<{ contractId: string; key: string }>): string[] {
  const key = ESCROW_KEY.toXDR('base64');
  const out = new Set<string>();
  for (const e of data) if (e.key === key) out.add(e.contractId);
  return [...out];
}
