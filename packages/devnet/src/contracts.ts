import { MuxedAccount, StrKey, xdr, type Asset } from '@stellar/stellar-sdk';
import { FareboxError } from '@farebox/protocol';
import { REGISTRY_LIMITS } from '@farebox/stellar';
import { addressVal, i128Val, MAX_INT64, scAddressToString, stringVal, symbolVal, toBig, u64Val } from './xdrutil.js';
import type { AccountState } from './state.js';

/** The ScErrorType of a host failure (the devnet's subset). */
export type HostErrorType = 'Contract' | 'Auth' | 'Value' | 'Storage' | 'WasmVm' | 'Crypto' | 'Context';

/** A failure inside contract execution, rendered the way Soroban renders it: `Error(Contract, #3)`. */
export class HostError extends FareboxError<'HOST_ERROR', { type: HostErrorType; detail: number | string }> {
  override readonly name: string = 'HostError';
  constructor(
    readonly type: HostErrorType,
    readonly detail: number | string,
  ) {
    super('HOST_ERROR', `HostError: Error(${type}, ${typeof detail === 'number' ? `#${detail}` : detail})`, { type, detail });
  }
}

/** What a contract can do while running: storage, authorisation, events, classic accounts. */
export interface HostContext {
  readonly contractId: string;
  readonly ledger: number;
  readonly timestamp: number;
  getData(key: xdr.ScVal): xdr.ScVal | undefined;
  putData(key: xdr.ScVal, val: xdr.ScVal): void;
  delData(key: xdr.ScVal): void;
  requireAuth(address: string): void;
  emit(topics: xdr.ScVal[], data: xdr.ScVal): void;
  /** Classic accounts (for the asset contract); marks the trustline in the footprint. */
  account(id: string, write: boolean): AccountState | undefined;
  /** Calls another hosted contract (the USDC asset contract); inside it, this contract is the invoker and authorises itself. */
  call(contractId: string, fn: string, args: xdr.ScVal[]): xdr.ScVal;
  /** Creates a contract; it can be called at once and is registered when the transaction commits. Fails if the id exists. */
  deploy(contract: DevnetContract): void;
}

/**
 * A contract the devnet hosts natively (no Wasm): dispatch by function name.
 * Other contracts (escrows) plug in by implementing this and registering under their id.
 */
export interface DevnetContract {
  readonly id: string;
  readonly kind: 'wasm' | 'stellar_asset';
  readonly label: string;
  /**
   * Its data is Soroban instance storage: getLedgerEntries serves it inside the contract
   * instance entry's `storage` map (as a stock client reads it), not as separate entries.
   */
  readonly instanceStorage?: boolean;
  invoke(ctx: HostContext, fn: string, args: xdr.ScVal[]): xdr.ScVal;
}

// --- argument decoding, failing the way the host does on a type mismatch ---
function arity(args: xdr.ScVal[], n: number) {
  if (args.length !== n) throw new HostError('WasmVm', 'InvalidAction');
}
export function argString(v: xdr.ScVal | undefined): string {
  if (v?.switch().name !== 'scvString') throw new HostError('Value', 'UnexpectedType');
  const s = v.str();
  return typeof s === 'string' ? s : Buffer.from(s).toString('utf8');
}
export function argI128(v: xdr.ScVal | undefined): bigint {
  if (v?.switch().name !== 'scvI128') throw new HostError('Value', 'UnexpectedType');
  const p = v.i128();
  return (BigInt.asIntN(64, toBig(p.hi())) << 64n) | toBig(p.lo());
}
export function argAddress(v: xdr.ScVal | undefined): string {
  if (v?.switch().name !== 'scvAddress') throw new HostError('Value', 'UnexpectedType');
  return scAddressToString(v.address());
}
function argOption<T>(v: xdr.ScVal | undefined, inner: (v: xdr.ScVal) => T): T | undefined {
  if (!v) throw new HostError('Value', 'UnexpectedType');
  return v.switch().name === 'scvVoid' ? undefined : inner(v);
}
const byteLen = (s: string) => Buffer.byteLength(s, 'utf8');

// --- the registry ---
const agentKey = (service: string) => xdr.ScVal.scvVec([symbolVal('Agent'), stringVal(service)]);

interface Agent {
  owner: string;
  service: string;
  price: bigint;
  endpoint: string;
  description: string;
  totalCalls: bigint;
  totalEarned: bigint;
  createdAt: bigint;
}

function agentVal(a: Agent): xdr.ScVal {
  const e = (k: string, v: xdr.ScVal) => new xdr.ScMapEntry({ key: symbolVal(k), val: v });
  return xdr.ScVal.scvMap([
    e('created_at', u64Val(a.createdAt)),
    e('description', stringVal(a.description)),
    e('endpoint', stringVal(a.endpoint)),
    e('owner', addressVal(a.owner)),
    e('price_per_call', i128Val(a.price)),
    e('service', stringVal(a.service)),
    e('total_calls', u64Val(a.totalCalls)),
    e('total_earned', i128Val(a.totalEarned)),
  ]);
}

function readAgent(v: xdr.ScVal): Agent {
  const m = new Map<string, xdr.ScVal>();
  for (const entry of v.map() ?? []) m.set(String(entry.key().sym()), entry.val());
  return {
    owner: argAddress(m.get('owner')),
    service: argString(m.get('service')),
    price: argI128(m.get('price_per_call')),
    endpoint: argString(m.get('endpoint')),
    description: argString(m.get('description')),
    totalCalls: toBig(m.get('total_calls')!.u64()),
    totalEarned: argI128(m.get('total_earned')),
    createdAt: toBig(m.get('created_at')!.u64()),
  };
}

function checkService(service: string) {
  if (byteLen(service) === 0 || byteLen(service) > REGISTRY_LIMITS.serviceMax) throw new HostError('Contract', 3);
}
function checkEndpoint(endpoint: string) {
  if (byteLen(endpoint) > REGISTRY_LIMITS.endpointMax) throw new HostError('Contract', 4);
}
function checkDescription(description: string) {
  if (byteLen(description) > REGISTRY_LIMITS.descriptionMax) throw new HostError('Contract', 5);
}
function checkPrice(price: bigint) {
  if (price <= 0n) throw new HostError('Contract', 6);
}

/** The service registry, with the interface of the public testnet deployment. */
export function registryContract(id: string): DevnetContract {
  return {
    id,
    kind: 'wasm',
    label: 'Farebox service registry',
    invoke(ctx, fn, args) {
      switch (fn) {
        case 'register_agent': {
          arity(args, 5);
          const owner = argAddress(args[0]);
          const service = argString(args[1]);
          const price = argI128(args[2]);
          const endpoint = argString(args[3]);
          const description = argString(args[4]);
          ctx.requireAuth(owner);
          checkService(service);
          checkPrice(price);
          checkEndpoint(endpoint);
          checkDescription(description);
          if (ctx.getData(agentKey(service))) throw new HostError('Contract', 1);
          const createdAt = BigInt(ctx.timestamp);
          ctx.putData(agentKey(service), agentVal({ owner, service, price, endpoint, description, totalCalls: 0n, totalEarned: 0n, createdAt }));
          ctx.emit([symbolVal('agent_registered'), addressVal(owner)], xdr.ScVal.scvVec([stringVal(service), i128Val(price), u64Val(createdAt)]));
          return xdr.ScVal.scvVoid();
        }
        case 'update_agent': {
          arity(args, 4);
          const service = argString(args[0]);
          const price = argOption(args[1], argI128);
          const endpoint = argOption(args[2], argString);
          const description = argOption(args[3], argString);
          const stored = ctx.getData(agentKey(service));
          if (!stored) throw new HostError('Contract', 2);
          const agent = readAgent(stored);
          ctx.requireAuth(agent.owner);
          if (price !== undefined) checkPrice(price);
          if (endpoint !== undefined) checkEndpoint(endpoint);
          if (description !== undefined) checkDescription(description);
          const next: Agent = { ...agent, price: price ?? agent.price, endpoint: endpoint ?? agent.endpoint, description: description ?? agent.description };
          ctx.putData(agentKey(service), agentVal(next));
          ctx.emit([symbolVal('agent_updated'), addressVal(agent.owner)], stringVal(service));
          return xdr.ScVal.scvVoid();
        }
        case 'deregister_agent': {
          arity(args, 1);
          const service = argString(args[0]);
          const stored = ctx.getData(agentKey(service));
          if (!stored) throw new HostError('Contract', 2);
          const agent = readAgent(stored);
          ctx.requireAuth(agent.owner);
          ctx.delData(agentKey(service));
          ctx.emit([symbolVal('agent_deregistered'), addressVal(agent.owner)], stringVal(service));
          return xdr.ScVal.scvVoid();
        }
        case 'get_agent': {
          arity(args, 1);
          const stored = ctx.getData(agentKey(argString(args[0])));
          if (!stored) throw new HostError('Contract', 2);
          return stored;
        }
        default:
          throw new HostError('WasmVm', 'MissingValue');
      }
    },
  };
}

/** Reads every registered agent from a contract-data view (for the explorer). */
export function decodeAgentEntry(val: xdr.ScVal): { owner: string; service: string; price: bigint; endpoint: string; description: string; createdAt: bigint } {
  return readAgent(val);
}

// --- the Stellar Asset Contract for USDC, sharing balances with classic trustlines ---
const SAC = { AccountMissing: 6, NegativeAmount: 8, Balance: 10, TrustlineMissing: 13 } as const;
const balanceKey = (addr: string) => xdr.ScVal.scvVec([symbolVal('Balance'), addressVal(addr)]);

export function stellarAssetContract(id: string, asset: Asset): DevnetContract {
  const issuer = asset.getIssuer();
  const name = `${asset.getCode()}:${issuer}`;

  function debit(ctx: HostContext, who: string, amount: bigint) {
    if (who === issuer) return;
    if (StrKey.isValidContract(who)) {
      const cur = ctx.getData(balanceKey(who));
      const bal = cur ? argI128(cur) : 0n;
      if (bal < amount) throw new HostError('Contract', SAC.Balance);
      ctx.putData(balanceKey(who), i128Val(bal - amount));
      return;
    }
    const acc = ctx.account(who, true);
    if (!acc) throw new HostError('Contract', SAC.AccountMissing);
    if (!acc.usdc) throw new HostError('Contract', SAC.TrustlineMissing);
    if (acc.usdc.balance < amount) throw new HostError('Contract', SAC.Balance);
    acc.usdc.balance -= amount;
  }
  function credit(ctx: HostContext, who: string, amount: bigint) {
    if (who === issuer) return;
    if (StrKey.isValidContract(who)) {
      const cur = ctx.getData(balanceKey(who));
      ctx.putData(balanceKey(who), i128Val((cur ? argI128(cur) : 0n) + amount));
      return;
    }
    const acc = ctx.account(who, true);
    if (!acc) throw new HostError('Contract', SAC.AccountMissing);
    if (!acc.usdc) throw new HostError('Contract', SAC.TrustlineMissing);
    if (acc.usdc.balance + amount > acc.usdc.limit || acc.usdc.balance + amount > MAX_INT64) throw new HostError('Contract', SAC.Balance);
    acc.usdc.balance += amount;
  }

  return {
    id,
    kind: 'stellar_asset',
    label: `Stellar Asset Contract for ${name}`,
    invoke(ctx, fn, args) {
      switch (fn) {
        case 'transfer': {
          arity(args, 3);
          const from = argAddress(args[0]);
          const dest = argAddress(args[1]);
          // CAP-67: a muxed `to` (M...) is credited to its account; the event names the account and carries the id in its data.
          const muxed = StrKey.isValidMed25519PublicKey(dest) ? MuxedAccount.fromAddress(dest, '0') : undefined;
          const to = muxed ? muxed.baseAccount().accountId() : dest;
          const amount = argI128(args[2]);
          if (amount < 0n) throw new HostError('Contract', SAC.NegativeAmount);
          ctx.requireAuth(from);
          debit(ctx, from, amount);
          credit(ctx, to, amount);
          const data = muxed
            ? xdr.ScVal.scvMap([
                new xdr.ScMapEntry({ key: symbolVal('amount'), val: i128Val(amount) }),
                new xdr.ScMapEntry({ key: symbolVal('to_muxed_id'), val: u64Val(BigInt(muxed.id())) }),
              ])
            : i128Val(amount);
          ctx.emit([symbolVal('transfer'), addressVal(from), addressVal(to), stringVal(name)], data);
          return xdr.ScVal.scvVoid();
        }
        case 'balance': {
          arity(args, 1);
          const who = argAddress(args[0]);
          if (StrKey.isValidContract(who)) {
            const cur = ctx.getData(balanceKey(who));
            return cur ?? i128Val(0n);
          }
          if (who === issuer) return i128Val(MAX_INT64);
          const acc = ctx.account(who, false);
          if (!acc) throw new HostError('Contract', SAC.AccountMissing);
          if (!acc.usdc) throw new HostError('Contract', SAC.TrustlineMissing);
          return i128Val(acc.usdc.balance);
        }
        case 'decimals':
          return xdr.ScVal.scvU32(7);
        case 'name':
          return stringVal(name);
        case 'symbol':
          return stringVal(asset.getCode());
        default:
          throw new HostError('WasmVm', 'MissingValue');
      }
    },
  };
}
