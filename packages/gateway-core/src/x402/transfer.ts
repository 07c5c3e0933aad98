import { Address, FeeBumpTransaction, StrKey, TransactionBuilder, rpc, scValToNative, xdr } from '@stellar/stellar-sdk';
import type { NetworkConfig } from '@farebox/stellar';

/** What a settled transaction did, read back from the network: its token transfers and the fee it was charged. */
export interface SettledTransfer {
  /** The sum of `asset`'s transfers from `from` to `to` in the transaction (base units); 0 when there was none. */
  amount: bigint;
  /** Every transfer event of `asset` in the transaction. */
  transfers: Array<{ from: string; to: string; amount: bigint }>;
  /** The network fee charged (stroops), the fee-bump's when there was one. */
  feeCharged: bigint;
}

/** The `from` of a payload's `transfer(from, to, amount)` (the payer), or undefined when the envelope is not one. */
export function payerOf(transactionXdr: unknown, passphrase: string): string | undefined {
  if (typeof transactionXdr !== 'string' || transactionXdr.length > 65_536) return undefined;
  try {
    const tx = TransactionBuilder.fromXDR(transactionXdr, passphrase);
    if (!('operations' in tx) || tx.operations.length !== 1) return undefined;
    const op = tx.operations[0]!;
    if (op.type !== 'invokeHostFunction' || op.func.switch().name !== 'hostFunctionTypeInvokeContract') return undefined;
    const from = op.func.invokeContract().args()[0];
    if (!from) return undefined;
    return Address.fromScVal(from).toString();
  } catch {
    return undefined;
  }
}

/**
 * The payer's authorization in a transfer transaction (a payload's, or one the
 * network applied, fee bump or not): the nonce of the `from` address's
 * authorization entry (a signed 64-bit integer, as text) and the last ledger
 * it is valid in; undefined when there is none.
 */
export function authorizationOf(
  transaction: string | xdr.TransactionEnvelope,
  passphrase: string,
  payer: string,
): { nonce: string; expirationLedger: number } | undefined {
  try {
    const parsed = TransactionBuilder.fromXDR(transaction, passphrase);
    const tx = parsed instanceof FeeBumpTransaction ? parsed.innerTransaction : parsed;
    if (tx.operations.length !== 1) return undefined;
    const op = tx.operations[0]!;
    if (op.type !== 'invokeHostFunction') return undefined;
    for (const entry of op.auth ?? []) {
      const credentials = entry.credentials();
      if (credentials.switch().name !== 'sorobanCredentialsAddress') continue;
      const address = credentials.address();
      if (Address.fromScAddress(address.address()).toString() !== payer) continue;
      return { nonce: address.nonce().toString(), expirationLedger: address.signatureExpirationLedger() };
    }
    return undefined;
  } catch {
    return undefined;
  }
}

/** The fee a payload's transaction offers (stroops) and its Soroban resource fee, or undefined when unreadable. */
export function feesOf(transactionXdr: string, passphrase: string): { fee: bigint; resourceFee: bigint } | undefined {
  try {
    const tx = TransactionBuilder.fromXDR(transactionXdr, passphrase);
    if (!('operations' in tx)) return undefined;
    const envelope = tx.toEnvelope();
    const data = envelope.switch().name === 'envelopeTypeTx' ? envelope.v1().tx().ext().value() : undefined;
    const resourceFee = data instanceof xdr.SorobanTransactionData ? BigInt(data.resourceFee().toString()) : 0n;
    return { fee: BigInt(tx.fee), resourceFee };
  } catch {
    return undefined;
  }
}

function contractEvents(info: rpc.Api.GetSuccessfulTransactionResponse): xdr.ContractEvent[] {
  const listed = (info.events?.contractEventsXdr ?? []).flat();
  if (listed.length) return listed;
  const meta = info.resultMetaXdr;
  if (meta.switch() === 3) return meta.v3().sorobanMeta()?.events() ?? [];
  if (meta.switch() === 4)
    return meta
      .v4()
      .operations()
      .flatMap((op) => op.events());
  return [];
}

/** A token transfer event (`["transfer", from, to, ...]`, data the amount or `{ amount, to_muxed_id }`) of `asset`, or null. */
function transferOf(event: xdr.ContractEvent, asset: string): { from: string; to: string; amount: bigint } | null {
  if (event.type().name !== 'contract') return null;
  const id = event.contractId();
  if (!id || StrKey.encodeContract(id as unknown as Buffer) !== asset) return null;
  const body = event.body().v0();
  const topics = body.topics();
  if (topics.length < 3 || topics[0]!.switch().name !== 'scvSymbol' || topics[0]!.sym().toString() !== 'transfer') return null;
  const data = scValToNative(body.data()) as unknown;
  const amount = typeof data === 'bigint' ? data : typeof (data as { amount?: unknown })?.amount === 'bigint' ? (data as { amount: bigint }).amount : null;
  if (amount === null) return null;
  return { from: Address.fromScVal(topics[1]!).toString(), to: Address.fromScVal(topics[2]!).toString(), amount };
}

/**
 * Reads a settled transaction back from the network's RPC: the transfers of
 * `asset` it made, the part of them from `from` to `to`, and its fee. The
 * figure a payment is recorded with comes from here, never from the request.
 * Throws when the transaction is not found successful after a few tries.
 */
export async function readSettledTransfer(
  network: Pick<NetworkConfig, 'rpcUrl' | 'allowHttp'>,
  hash: string,
  expect: { asset: string; from: string; to: string },
): Promise<SettledTransfer> {
  const server = new rpc.Server(network.rpcUrl, { allowHttp: network.allowHttp });
  let info: rpc.Api.GetTransactionResponse | undefined;
  for (let attempt = 0; attempt < 10; attempt++) {
    info = await server.getTransaction(hash);
    if (info.status !== rpc.Api.GetTransactionStatus.NOT_FOUND) break;
    await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
  }
  if (!info || info.status !== rpc.Api.GetTransactionStatus.SUCCESS) throw new Error(`transaction ${hash} is ${info?.status ?? 'unknown'} on the network`);
  return settledTransfer(info, expect);
}

/** What a successful transaction moved of `expect.asset` (from `expect.from` to `expect.to`) and its fee. */
export function settledTransfer(info: rpc.Api.GetSuccessfulTransactionResponse, expect: { asset: string; from: string; to: string }): SettledTransfer {
  const transfers = contractEvents(info)
    .map((e) => transferOf(e, expect.asset))
    .filter((t): t is NonNullable<typeof t> => t !== null);
  const amount = transfers.filter((t) => t.from === expect.from && t.to === expect.to).reduce((n, t) => n + t.amount, 0n);
  return { amount, transfers, feeCharged: BigInt(info.resultXdr.feeCharged().toString()) };
}
