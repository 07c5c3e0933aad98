// Paying a service with the standard x402 `exact` scheme on Stellar: one USDC
// `transfer(payer, payTo, amount)` whose Soroban authorization entry the payer
// signs (as @x402/stellar's client does); the service's facilitator submits it
// and pays the fee. Built with @stellar/stellar-sdk's AssembledTransaction, which
// (unlike the stock client) also reaches an http RPC, such as the local devnet's.
import { EXACT_NETWORKS, EXACT_SCHEME, X402_HEADERS, encodeExactPaymentHeader, formatAmount, toUsd, type ExactPayment } from '@farebox/protocol';
import { servicePayTo, type NetworkConfig } from '@farebox/stellar';
import { contract, nativeToScVal, rpc } from '@stellar/stellar-sdk';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { handleSimulationResult } from '@x402/stellar';
import { ClientError } from '../errors.js';
import type { DirectContext } from './context.js';
import type { ResolvedTarget } from './endpoint.js';
import { errorText, serverMessage, type Answer } from './http.js';
import type { CallOptions, DirectCallResult, DirectCallStep, ProgressEvent, TraceStep } from './types.js';

/** Signs Soroban authorization entries for the payer (`contract.basicNodeSigner(...).signAuthEntry`, or a wallet's). */
export interface AuthEntrySigner {
  address: string;
  signAuthEntry: NonNullable<Parameters<contract.AssembledTransaction<unknown>['signAuthEntries']>[0]>['signAuthEntry'];
}

/** Ledgers are estimated at 5 s, as the stock client and facilitator do when they cannot ask Horizon. */
const LEDGER_SECONDS = 5;

/** The `exact` offer of a 402 on this client's network, as sent (the payload echoes it unchanged). */
export function exactOffer(net: NetworkConfig, answer: Answer): { required: PaymentRequired; offer: PaymentRequirements } | undefined {
  if (!(EXACT_NETWORKS as readonly string[]).includes(net.x402Network)) return undefined;
  const header = answer.headers.get(X402_HEADERS.paymentRequired);
  if (!header) return undefined;
  let required: PaymentRequired;
  try {
    required = decodePaymentRequiredHeader(header);
  } catch {
    return undefined;
  }
  const offer = required.accepts?.find((a) => a.scheme === EXACT_SCHEME && a.network === net.x402Network);
  return offer ? { required, offer } : undefined;
}

/** Builds, simulates and signs the transfer; returns the base64 transaction of the payload. */
export async function signExactTransfer(net: NetworkConfig, signer: AuthEntrySigner, offer: PaymentRequirements): Promise<string> {
  const server = new rpc.Server(net.rpcUrl, { allowHttp: net.allowHttp || net.rpcUrl.startsWith('http://') });
  const latest = await server.getLatestLedger();
  const expiration = latest.sequence + Math.ceil(offer.maxTimeoutSeconds / LEDGER_SECONDS);
  const tx = await contract.AssembledTransaction.build({
    contractId: offer.asset,
    method: 'transfer',
    args: [nativeToScVal(signer.address, { type: 'address' }), nativeToScVal(offer.payTo, { type: 'address' }), nativeToScVal(offer.amount, { type: 'i128' })],
    networkPassphrase: net.passphrase,
    rpcUrl: net.rpcUrl,
    allowHttp: true,
    server,
    parseResultXdr: (result) => result,
  });
  handleSimulationResult(tx.simulation as Parameters<typeof handleSimulationResult>[0]);
  const missing = tx.needsNonInvokerSigningBy();
  if (!missing.includes(signer.address) || missing.length > 1)
    throw new Error(`expected to sign with [${signer.address}], the transfer needs [${missing.join(', ')}]`);
  await tx.signAuthEntries({ address: signer.address, signAuthEntry: signer.signAuthEntry, expiration });
  await tx.simulate();
  handleSimulationResult(tx.simulation as Parameters<typeof handleSimulationResult>[0]);
  const still = tx.needsNonInvokerSigningBy();
  if (still.length > 0) throw new Error(`unexpected signer(s) required: [${still.join(', ')}]`);
  return tx.built!.toXDR();
}

/**
 * Pays one call with `exact`: checks the offer (USDC on this network, a receiver
 * the client trusts, within `maxCost`), signs the transfer, calls the service
 * with `PAYMENT-SIGNATURE`, and reads the settlement from `PAYMENT-RESPONSE`.
 */
export async function payExact<T>(
  ctx: DirectContext,
  signer: AuthEntrySigner,
  resolved: ResolvedTarget,
  body: string,
  found: { required: PaymentRequired; offer: PaymentRequirements },
  options: Omit<CallOptions, 'maxCost'> & { startedAt: number; maxCost?: bigint; quoteMs: number },
): Promise<DirectCallResult<T>> {
  const { net } = ctx;
  const { offer, required } = found;
  const steps: TraceStep[] = [{ step: 'quote', status: 'ok', startedAt: new Date(options.startedAt).toISOString(), ms: options.quoteMs }];
  const report = (event: Omit<ProgressEvent, 'elapsedMs'>) => {
    try {
      options.onProgress?.({ ...event, elapsedMs: Date.now() - options.startedAt });
    } catch {
      // A failing progress callback must not break a payment in flight.
    }
  };
  const data = resolved.service ? { service: resolved.service } : {};
  const amount = BigInt(offer.amount);
  if (offer.asset !== net.usdc.contractId) {
    throw new ClientError('QUOTE', `the exact offer asks for token ${offer.asset}, not USDC (${net.usdc.contractId}): nothing was paid`, data);
  }
  if (amount <= 0n) throw new ClientError('QUOTE', 'the exact offer amount is not positive', data);
  if (offer.extra?.areFeesSponsored !== true)
    throw new ClientError('QUOTE', 'the exact offer does not sponsor the fee (extra.areFeesSponsored): nothing was paid', data);
  if (options.maxCost !== undefined && amount > options.maxCost) {
    const usdc = (u: bigint) => `${formatAmount(u, { trim: true })} USDC`;
    throw new ClientError('PRICE_LIMIT', `the service asks ${usdc(amount)}, above maxCost ${usdc(options.maxCost)}: nothing was paid`, data);
  }
  if (offer.payTo !== resolved.owner) {
    // A Farebox service is paid to the platform treasury's address for that service (it credits the owner); anything else must be the owner itself.
    const treasury = await ctx.platformAddress().catch(() => undefined);
    const named = resolved.service ?? (typeof offer.extra?.service === 'string' ? offer.extra.service : undefined);
    const expected = treasury && named ? servicePayTo(treasury, named) : undefined;
    if (offer.payTo !== expected) {
      throw new ClientError(
        'PAYTO_MISMATCH',
        `the exact offer pays ${offer.payTo}, neither the service's owner ${resolved.owner} nor the platform treasury's address for ${named ?? 'the service'}${expected ? ` ${expected}` : ''}: nothing was paid`,
        data,
      );
    }
  }

  async function step<R>(name: DirectCallStep, fn: () => Promise<R>, describe: (r: R) => Partial<TraceStep> = () => ({})): Promise<R> {
    const t0 = Date.now();
    report({ step: name, phase: 'start' });
    try {
      const r = await fn();
      const extra = describe(r);
      steps.push({ step: name, status: 'ok', startedAt: new Date(t0).toISOString(), ms: Date.now() - t0, ...extra });
      report({ step: name, phase: 'done', ...(extra.txHash ? { txHash: extra.txHash, explorerUrl: net.explorer.tx(extra.txHash) } : {}) });
      return r;
    } catch (e) {
      const err = e instanceof ClientError ? e : new ClientError('SERVICE', `${name} failed: ${errorText(e)}`, data);
      steps.push({ step: name, status: 'failed', startedAt: new Date(t0).toISOString(), ms: Date.now() - t0, error: err.message });
      report({ step: name, phase: 'failed', message: err.message });
      err.data.trace = { steps: [...steps] };
      throw err;
    }
  }

  const answer = await step('call', async () => {
    let transaction: string;
    try {
      transaction = await signExactTransfer(net, signer, offer);
    } catch (e) {
      throw new ClientError('QUOTE', `cannot build the exact payment: ${errorText(e)}; nothing was paid`, data);
    }
    const payment: ExactPayment = {
      x402Version: 2,
      ...(required.resource ? { resource: required.resource } : {}),
      accepted: offer as ExactPayment['accepted'],
      payload: { transaction },
      ...(required.extensions ? { extensions: required.extensions } : {}),
    };
    const res = await ctx.request(resolved.endpoint, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', [X402_HEADERS.paymentSignature]: encodeExactPaymentHeader(payment) },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (res.status === 200) return res;
    const msg = serverMessage(res.json, res.text);
    const settled = readReceipt(res);
    const paidData = { ...data, status: res.status, serverMessage: msg, ...(settled?.transaction ? { transaction: settled.transaction } : {}) };
    if (res.status === 402 || res.status === 409)
      throw new ClientError('PAYMENT_REFUSED', `the service refused the exact payment: ${msg}; nothing was paid`, paidData);
    const where = settled?.success ? `; the payment was settled in ${settled.transaction}: ask the service for a refund` : '';
    throw new ClientError('SERVICE', `the service failed after the exact payment (HTTP ${res.status}): ${msg}${where}`, paidData);
  });
  const receipt = await step(
    'settled',
    async () => readReceipt(answer),
    (r) => (r?.success && r.transaction ? { txHash: r.transaction, explorerUrl: net.explorer.tx(r.transaction) } : { detail: { settled: 'unconfirmed' } }),
  );
  const transaction = receipt?.success ? receipt.transaction : undefined;
  return {
    scheme: 'exact',
    result: answer.json as T,
    cost: { baseUnits: amount, usdc: formatAmount(amount, { trim: true }), usd: toUsd(amount) },
    ...(transaction ? { transaction, releaseTx: transaction, explorerUrl: net.explorer.tx(transaction) } : {}),
    ...(receipt?.payer ? { payer: receipt.payer } : { payer: signer.address }),
    trace: { steps },
  };
}

function readReceipt(answer: Answer): { success: boolean; transaction: string; payer?: string } | undefined {
  const header = answer.headers.get(X402_HEADERS.paymentResponseV2) ?? answer.headers.get(X402_HEADERS.paymentResponse);
  if (!header) return undefined;
  try {
    const r = decodePaymentResponseHeader(header);
    return { success: r.success, transaction: r.transaction, ...(r.payer ? { payer: r.payer } : {}) };
  } catch {
    return undefined;
  }
}
