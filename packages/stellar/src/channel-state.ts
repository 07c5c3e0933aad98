// A one-way payment channel's state as the chain holds it: its instance storage
// (the contract keeps everything there, keyed `ScVec([Symbol("<Variant>")])`),
// the executable it runs, and its token balance. One ledger-entry read and one
// simulation; what a recipient checks before it accepts a voucher.
import { Address, Contract, nativeToScVal, rpc, scValToNative, xdr } from '@stellar/stellar-sdk';
import { StellarError } from './errors.js';
import type { NetworkConfig } from './network.js';
import type { TxSigner } from './signer.js';
import { invokeAsSource, rpcCall, simulateRead } from './soroban.js';

/** What a channel contract holds, read from the chain. Amounts in base units. */
export interface ChannelState {
  channel: string;
  /** The SEP-41 token (`C...`) the channel holds. */
  token: string;
  /** Who funded it and gets the rest back (`from`). */
  funder: string;
  /** Who may settle and close with a commitment (`to`). */
  recipient: string;
  /** The Ed25519 key that signs commitments, 64 lower-case hex characters. */
  commitmentKey: string;
  /** Ledgers between the funder's `close_start` and its `refund`. */
  refundWaitingPeriod: number;
  balance: bigint;
  withdrawn: bigint;
  /** balance + withdrawn: everything ever put in. */
  deposited: bigint;
  /** The ledger from which the channel is closed (`close_start`: later; `close`: at once), or null. */
  closeEffectiveAtLedger: number | null;
  /** The hash of the Wasm the contract runs (hex), or null for a built-in contract. */
  wasmHash: string | null;
  /** The latest ledger when this was read. */
  latestLedger: number;
}

const KEYS = ['Token', 'From', 'CommitmentKey', 'To', 'RefundWaitingPeriod', 'WithdrawnAmount', 'CloseEffectiveAtLedger'] as const;
type Key = (typeof KEYS)[number];

/** Reads `channel`'s state; NOT_FOUND when no contract lives there or it holds no channel. */
export async function readChannelState(server: rpc.Server, config: NetworkConfig, channel: string): Promise<ChannelState> {
  let entry: rpc.Api.LedgerEntryResult;
  try {
    entry = await server.getContractData(channel, xdr.ScVal.scvLedgerKeyContractInstance(), rpc.Durability.Persistent);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (/not found/i.test(message)) throw new StellarError('NOT_FOUND', `no contract at ${channel}`, { channel });
    throw new StellarError('RPC_ERROR', `getLedgerEntries failed: ${message}`, { cause: e });
  }
  const instance = entry.val.contractData().val().instance();
  const executable = instance.executable();
  const wasmHash = executable.switch().name === 'contractExecutableWasm' ? Buffer.from(executable.wasmHash()).toString('hex') : null;
  const stored = new Map<Key, xdr.ScVal>();
  for (const e of instance.storage() ?? []) {
    const k = e.key();
    if (k.switch().name !== 'scvVec') continue;
    const parts = k.vec() ?? [];
    if (parts.length !== 1 || parts[0]!.switch().name !== 'scvSymbol') continue;
    const name = parts[0]!.sym().toString() as Key;
    if (KEYS.includes(name)) stored.set(name, e.val());
  }
  const need = (k: Key) => {
    const v = stored.get(k);
    if (!v) throw new StellarError('NOT_FOUND', `${channel} is not a payment channel (no ${k} in its storage)`, { channel });
    return v;
  };
  const address = (v: xdr.ScVal) => Address.fromScVal(v).toString();
  const key = need('CommitmentKey');
  if (key.switch().name !== 'scvBytes' || key.bytes().length !== 32)
    throw new StellarError('NOT_FOUND', `${channel} has no 32-byte commitment key`, { channel });
  const close = stored.get('CloseEffectiveAtLedger');
  const withdrawnVal = stored.get('WithdrawnAmount');
  const balanceVal = await simulateRead(server, config, new Contract(channel).call('balance'));
  const balance = BigInt(scValToNative(balanceVal) as bigint | number);
  const withdrawn = withdrawnVal ? BigInt(scValToNative(withdrawnVal) as bigint | number) : 0n;
  const latest = await rpcCall('getLatestLedger', () => server.getLatestLedger());
  return {
    channel,
    token: address(need('Token')),
    funder: address(need('From')),
    recipient: address(need('To')),
    commitmentKey: Buffer.from(key.bytes()).toString('hex'),
    refundWaitingPeriod: Number(scValToNative(need('RefundWaitingPeriod'))),
    balance,
    withdrawn,
    deposited: balance + withdrawn,
    closeEffectiveAtLedger: close ? Number(scValToNative(close)) : null,
    wasmHash,
    latestLedger: latest.sequence,
  };
}

function i128Val(v: bigint): xdr.ScVal {
  return nativeToScVal(v, { type: 'i128' });
}

/** What {@link openChannel} opens: `amount` of `token` from the signer to `recipient`, commitments signed by `commitmentKey` (32 raw bytes). */
export interface OpenChannelInput {
  factory: string;
  token: string;
  recipient: string;
  commitmentKey: Uint8Array;
  amount: bigint;
  /** Ledgers between the funder's close_start and its refund. */
  refundWaitingPeriod: number;
  /** 32 bytes that fix the channel's address (random when absent). */
  salt?: Uint8Array;
}

/** Opens a one-way channel through `factory` (`open`), funded by the signer: the channel's address and the transaction. */
export async function openChannel(
  server: rpc.Server,
  config: NetworkConfig,
  signer: TxSigner,
  input: OpenChannelInput,
): Promise<{ channel: string; txHash: string }> {
  if (input.commitmentKey.length !== 32) throw new RangeError('a commitment key is 32 bytes');
  const salt = input.salt ?? globalThis.crypto.getRandomValues(new Uint8Array(32));
  const op = new Contract(input.factory).call(
    'open',
    xdr.ScVal.scvBytes(Buffer.from(salt)),
    new Address(input.token).toScVal(),
    new Address(signer.publicKey).toScVal(),
    xdr.ScVal.scvBytes(Buffer.from(input.commitmentKey)),
    new Address(input.recipient).toScVal(),
    i128Val(input.amount),
    xdr.ScVal.scvU32(input.refundWaitingPeriod),
  );
  const { txHash, returnValue } = await invokeAsSource(server, config, signer, op);
  if (!returnValue) throw new StellarError('RPC_ERROR', 'open returned no channel address');
  return { channel: Address.fromScVal(returnValue).toString(), txHash };
}

/** The channel's own calls: the funder's `top_up`, `close_start` and `refund`; the recipient's `settle` and `close` with a commitment. */
export type ChannelCall =
  | { fn: 'top_up'; amount: bigint }
  | { fn: 'close_start' }
  | { fn: 'refund' }
  | { fn: 'settle' | 'close'; amount: bigint; signature: Uint8Array };

/** Sends one channel call signed by `signer` (the funder or the recipient, as the call needs). */
export function channelInvoke(server: rpc.Server, config: NetworkConfig, signer: TxSigner, channel: string, call: ChannelCall): Promise<{ txHash: string }> {
  const c = new Contract(channel);
  const op =
    call.fn === 'top_up'
      ? c.call('top_up', i128Val(call.amount))
      : call.fn === 'settle' || call.fn === 'close'
        ? c.call(call.fn, i128Val(call.amount), xdr.ScVal.scvBytes(Buffer.from(call.signature)))
        : c.call(call.fn);
  return invokeAsSource(server, config, signer, op);
}
