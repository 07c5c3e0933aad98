// The one-way payment channel of stellar-experimental/one-way-channel (contracts/channel
// and contracts/channel-factory), hosted natively by the devnet with the reference
// contract's functions, storage keys, errors and events.
import { Keypair, StrKey, xdr } from '@stellar/stellar-sdk';
import { channelAddress, commitmentBytes } from '@farebox/stellar';
import { argAddress, argI128, HostError, type DevnetContract, type HostContext } from '../contracts.js';
import { addressVal, i128Val, sha256, symbolVal, verifyEd25519 } from '../xdrutil.js';

/** The channel factory of the devnet, derived from a fixed label. */
export const LOCAL_CHANNEL_FACTORY_ID: string = StrKey.encodeContract(sha256('farebox-devnet:channel-factory'));

/** The label of the hosted channel contract; its instance's Wasm hash is sha256(`farebox-devnet:wasm:<label>`), as for every hosted contract. */
export const CHANNEL_CONTRACT_LABEL = 'One-way payment channel (stellar-experimental/one-way-channel)';
const FACTORY_LABEL = 'One-way payment channel factory (stellar-experimental/one-way-channel)';

/** The factory's `wasm_hash` until `set_wasm`: the hash the channel instances report as their executable. */
export const CHANNEL_WASM_HASH: Buffer = sha256(`farebox-devnet:wasm:${CHANNEL_CONTRACT_LABEL}`);
/** The factory's `admin`: an account derived from a fixed label (nobody holds its key outside the devnet's source). */
export const CHANNEL_FACTORY_ADMIN: string = Keypair.fromRawEd25519Seed(sha256('farebox-devnet:channel-factory-admin')).publicKey();

const Err = { NegativeAmount: 1, NotClosed: 2, RefundWaitingPeriodNotElapsed: 3, AlreadyClosed: 4 } as const;
const fail = (n: number) => new HostError('Contract', n);

/** A `#[contracttype] enum DataKey` unit variant: `ScVec([Symbol("<Variant>")])`. */
const dataKey = (variant: string) => xdr.ScVal.scvVec([symbolVal(variant)]);
export const CHANNEL_KEYS = {
  Token: dataKey('Token'),
  From: dataKey('From'),
  CommitmentKey: dataKey('CommitmentKey'),
  To: dataKey('To'),
  RefundWaitingPeriod: dataKey('RefundWaitingPeriod'),
  WithdrawnAmount: dataKey('WithdrawnAmount'),
  CloseEffectiveAtLedger: dataKey('CloseEffectiveAtLedger'),
} as const;
const FACTORY_KEYS = { Admin: dataKey('Admin'), WasmHash: dataKey('WasmHash') } as const;

// --- argument decoding, failing the way the host does ---
function arity(args: xdr.ScVal[], n: number) {
  if (args.length !== n) throw new HostError('WasmVm', 'InvalidAction');
}
function argBytesN(v: xdr.ScVal | undefined, n: number): Buffer {
  if (v?.switch().name !== 'scvBytes') throw new HostError('Value', 'UnexpectedType');
  const b = Buffer.from(v.bytes());
  if (b.length !== n) throw new HostError('Value', 'UnexpectedSize');
  return b;
}
function argU32(v: xdr.ScVal | undefined): number {
  if (v?.switch().name !== 'scvU32') throw new HostError('Value', 'UnexpectedType');
  return v.u32();
}

/** Reads a stored value; a missing one is the `unwrap()` of a `None`, a trap. */
function stored(ctx: HostContext, key: xdr.ScVal): xdr.ScVal {
  const v = ctx.getData(key);
  if (!v) throw new HostError('WasmVm', 'InvalidAction');
  return v;
}

function mapVal(fields: Record<string, xdr.ScVal>): xdr.ScVal {
  return xdr.ScVal.scvMap(
    Object.keys(fields)
      .sort()
      .map((k) => new xdr.ScMapEntry({ key: symbolVal(k), val: fields[k]! })),
  );
}

/** A `#[contractevent]` with its defaults: one topic, the struct's snake_case name; data, an ScMap by field name. */
function publish(ctx: HostContext, name: string, fields: Record<string, xdr.ScVal>): void {
  ctx.emit([symbolVal(name)], mapVal(fields));
}

interface Channel {
  token: string;
  from: string;
  to: string;
}

const config = (ctx: HostContext): Channel => ({
  token: argAddress(stored(ctx, CHANNEL_KEYS.Token)),
  from: argAddress(stored(ctx, CHANNEL_KEYS.From)),
  to: argAddress(stored(ctx, CHANNEL_KEYS.To)),
});
const withdrawn = (ctx: HostContext): bigint => {
  const v = ctx.getData(CHANNEL_KEYS.WithdrawnAmount);
  return v ? argI128(v) : 0n;
};
const closeEffectiveAt = (ctx: HostContext): number | undefined => {
  const v = ctx.getData(CHANNEL_KEYS.CloseEffectiveAtLedger);
  return v ? argU32(v) : undefined;
};
const refundWaitingPeriod = (ctx: HostContext): number => argU32(stored(ctx, CHANNEL_KEYS.RefundWaitingPeriod));
const balanceOf = (ctx: HostContext, token: string): bigint => argI128(ctx.call(token, 'balance', [addressVal(ctx.contractId)]));
const transfer = (ctx: HostContext, token: string, from: string, to: string, amount: bigint): void =>
  void ctx.call(token, 'transfer', [addressVal(from), addressVal(to), i128Val(amount)]);

/**
 * Whether the devnet's asset contract would accept crediting `amount` to `to` (the account exists,
 * holds the trustline and stays within its limit): `close`'s `try_transfer` refund is attempted only
 * then, since a hosted call that fails half-way is not rolled back inside the transaction.
 */
function creditWouldSucceed(ctx: HostContext, to: string, amount: bigint): boolean {
  if (StrKey.isValidContract(to)) return true;
  const acc = ctx.account(to, false);
  if (!acc?.usdc) return false;
  return acc.usdc.balance + amount <= acc.usdc.limit && acc.usdc.balance + amount <= (1n << 63n) - 1n;
}

function topUp(ctx: HostContext, amount: bigint, authorised: boolean): void {
  if (amount < 0n) throw fail(Err.NegativeAmount);
  if (amount > 0n) {
    const c = config(ctx);
    if (!authorised) ctx.requireAuth(c.from);
    transfer(ctx, c.token, c.from, ctx.contractId, amount);
  }
}

/** `Commitment::verify`: ed25519 over the commitment's XDR with the stored key; a bad signature fails as the host's crypto check does. */
function verifyCommitment(ctx: HostContext, passphrase: string, amount: bigint, sig: Buffer): void {
  const key = argBytesN(stored(ctx, CHANNEL_KEYS.CommitmentKey), 32);
  let ok = false;
  try {
    ok = verifyEd25519(StrKey.encodeEd25519PublicKey(key), commitmentBytes(ctx.contractId, amount, passphrase), sig);
  } catch {
    ok = false;
  }
  if (!ok) throw new HostError('Crypto', 'InvalidInput');
}

/** settle's body (also the first half of close): auth `to`, verify, pay out what is not yet withdrawn. */
function withdraw(ctx: HostContext, passphrase: string, args: xdr.ScVal[]): Channel {
  arity(args, 2);
  const amount = argI128(args[0]);
  const sig = argBytesN(args[1], 64);
  if (amount < 0n) throw fail(Err.NegativeAmount);
  const c = config(ctx);
  ctx.requireAuth(c.to);
  verifyCommitment(ctx, passphrase, amount, sig);
  const payout = amount - withdrawn(ctx);
  if (payout > 0n) {
    ctx.putData(CHANNEL_KEYS.WithdrawnAmount, i128Val(amount));
    transfer(ctx, c.token, ctx.contractId, c.to, payout);
    publish(ctx, 'withdraw', { amount: i128Val(payout), to: addressVal(c.to) });
  }
  return c;
}

/** One channel (`contracts/channel`), hosted natively; its storage is instance storage. */
export function channelContract(id: string, passphrase: string): DevnetContract {
  return {
    id,
    kind: 'wasm',
    label: CHANNEL_CONTRACT_LABEL,
    instanceStorage: true,
    invoke(ctx, fn, args) {
      const none = xdr.ScVal.scvVoid();
      switch (fn) {
        case '__constructor': {
          // Runs once, inside the factory's `open` (deploy_v2); the host refuses it afterwards.
          if (ctx.getData(CHANNEL_KEYS.Token)) throw new HostError('Context', 'InvalidAction');
          arity(args, 6);
          const token = argAddress(args[0]);
          const from = argAddress(args[1]);
          const commitmentKey = argBytesN(args[2], 32);
          const to = argAddress(args[3]);
          const amount = argI128(args[4]);
          const period = argU32(args[5]);
          if (amount < 0n) throw fail(Err.NegativeAmount);
          ctx.putData(CHANNEL_KEYS.Token, addressVal(token));
          ctx.putData(CHANNEL_KEYS.From, addressVal(from));
          ctx.putData(CHANNEL_KEYS.CommitmentKey, xdr.ScVal.scvBytes(commitmentKey));
          ctx.putData(CHANNEL_KEYS.To, addressVal(to));
          ctx.putData(CHANNEL_KEYS.RefundWaitingPeriod, xdr.ScVal.scvU32(period));
          // The factory required `from` already (amount > 0): as in the reference, the constructor's top_up needs no further auth.
          topUp(ctx, amount, true);
          publish(ctx, 'open', {
            amount: i128Val(amount),
            commitment_key: xdr.ScVal.scvBytes(commitmentKey),
            from: addressVal(from),
            refund_waiting_period: xdr.ScVal.scvU32(period),
            to: addressVal(to),
            token: addressVal(token),
          });
          return none;
        }
        case 'top_up':
          arity(args, 1);
          topUp(ctx, argI128(args[0]), false);
          return none;
        case 'token':
          arity(args, 0);
          return stored(ctx, CHANNEL_KEYS.Token);
        case 'from':
          arity(args, 0);
          return stored(ctx, CHANNEL_KEYS.From);
        case 'to':
          arity(args, 0);
          return stored(ctx, CHANNEL_KEYS.To);
        case 'refund_waiting_period':
          arity(args, 0);
          return stored(ctx, CHANNEL_KEYS.RefundWaitingPeriod);
        case 'balance':
          arity(args, 0);
          return i128Val(balanceOf(ctx, config(ctx).token));
        case 'deposited':
          arity(args, 0);
          return i128Val(balanceOf(ctx, config(ctx).token) + withdrawn(ctx));
        case 'withdrawn':
          arity(args, 0);
          return i128Val(withdrawn(ctx));
        case 'prepare_commitment': {
          arity(args, 1);
          const amount = argI128(args[0]);
          if (amount < 0n) throw fail(Err.NegativeAmount);
          return xdr.ScVal.scvBytes(commitmentBytes(ctx.contractId, amount, passphrase));
        }
        case 'settle':
          withdraw(ctx, passphrase, args);
          return none;
        case 'close': {
          const c = withdraw(ctx, passphrase, args);
          const now = ctx.ledger;
          const effective = closeEffectiveAt(ctx);
          if (!(effective !== undefined && effective <= now)) {
            ctx.putData(CHANNEL_KEYS.CloseEffectiveAtLedger, xdr.ScVal.scvU32(now));
            publish(ctx, 'close', { effective_at_ledger: xdr.ScVal.scvU32(now) });
          }
          // try_transfer of the whole remaining balance to the funder; a failure is ignored.
          const balance = balanceOf(ctx, c.token);
          if (balance > 0n && creditWouldSucceed(ctx, c.from, balance)) {
            let refunded = true;
            try {
              transfer(ctx, c.token, ctx.contractId, c.from, balance);
            } catch (e) {
              if (!(e instanceof HostError)) throw e;
              refunded = false;
            }
            if (refunded) publish(ctx, 'refund', { amount: i128Val(balance), from: addressVal(c.from) });
          }
          return none;
        }
        case 'close_start': {
          arity(args, 0);
          const now = ctx.ledger;
          const effective = closeEffectiveAt(ctx);
          if (effective !== undefined && now >= effective) throw fail(Err.AlreadyClosed);
          const c = config(ctx);
          ctx.requireAuth(c.from);
          const at = Math.min(now + refundWaitingPeriod(ctx), 0xffff_ffff);
          ctx.putData(CHANNEL_KEYS.CloseEffectiveAtLedger, xdr.ScVal.scvU32(at));
          publish(ctx, 'close', { effective_at_ledger: xdr.ScVal.scvU32(at) });
          return none;
        }
        case 'refund': {
          arity(args, 0);
          const effective = closeEffectiveAt(ctx);
          if (effective === undefined) throw fail(Err.NotClosed);
          if (ctx.ledger < effective) throw fail(Err.RefundWaitingPeriodNotElapsed);
          const c = config(ctx);
          ctx.requireAuth(c.from);
          const balance = balanceOf(ctx, c.token);
          if (balance > 0n) {
            transfer(ctx, c.token, ctx.contractId, c.from, balance);
            publish(ctx, 'refund', { amount: i128Val(balance), from: addressVal(c.from) });
          }
          return none;
        }
        default:
          throw new HostError('WasmVm', 'MissingValue');
      }
    },
  };
}

/**
 * The channel factory (`contracts/channel-factory`) at LOCAL_CHANNEL_FACTORY_ID: `open(salt, token, from,
 * commitment_key, to, amount, refund_waiting_period)` deploys a channel at the address Soroban derives
 * from (factory, salt) (`channelAddress` of @farebox/stellar), runs its constructor and returns it.
 */
export function channelFactoryContract(passphrase: string): DevnetContract {
  const id = LOCAL_CHANNEL_FACTORY_ID;
  return {
    id,
    kind: 'wasm',
    label: FACTORY_LABEL,
    instanceStorage: true,
    invoke(ctx, fn, args) {
      switch (fn) {
        case 'admin':
          arity(args, 0);
          return ctx.getData(FACTORY_KEYS.Admin) ?? addressVal(CHANNEL_FACTORY_ADMIN);
        case 'wasm_hash':
          arity(args, 0);
          return ctx.getData(FACTORY_KEYS.WasmHash) ?? xdr.ScVal.scvBytes(CHANNEL_WASM_HASH);
        case 'set_wasm': {
          // Kept for the interface: every channel this factory opens is the one hosted contract.
          arity(args, 1);
          const hash = argBytesN(args[0], 32);
          ctx.requireAuth(argAddress(ctx.getData(FACTORY_KEYS.Admin) ?? addressVal(CHANNEL_FACTORY_ADMIN)));
          ctx.putData(FACTORY_KEYS.WasmHash, xdr.ScVal.scvBytes(hash));
          return xdr.ScVal.scvVoid();
        }
        case 'open': {
          arity(args, 7);
          const salt = argBytesN(args[0], 32);
          const from = argAddress(args[2]);
          const amount = argI128(args[5]);
          if (amount > 0n) ctx.requireAuth(from);
          const channel = channelAddress(id, salt, passphrase);
          ctx.deploy(channelContract(channel, passphrase));
          ctx.call(channel, '__constructor', args.slice(1));
          return addressVal(channel);
        }
        default:
          throw new HostError('WasmVm', 'MissingValue');
      }
    },
  };
}

/** The channels found in the chain's storage (after loading a data directory): each keeps its CommitmentKey. */
export function channelIdsInStorage(data: Iterable<{ contractId: string; key: string }>): string[] {
  const key = CHANNEL_KEYS.CommitmentKey.toXDR('base64');
  const out = new Set<string>();
  for (const e of data) if (e.key === key) out.add(e.contractId);
  return [...out];
}
