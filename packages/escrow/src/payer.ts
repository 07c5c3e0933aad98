// The escrow payer: pays one x402 call from a key through a single-use escrow
// (quote, deploy, fund, call with X-PAYMENT, the release receipt). Shared by
// the caller SDK (`createClient().call()` of `@farebox/client`, which adds the
// registry lookup, the manifest check and its `ClientError`) and the gateway's
// wallet path (an account's own USDC, signed through the wallet provider).
import { PLATFORM_FEE_PCT, X402_HEADERS, decodePaymentResponse, encodePaymentHeader, formatAmount, toUsd } from '@farebox/protocol';
import type { NetworkConfig, TxSigner } from '@farebox/stellar';
import { z } from 'zod';
import type { EscrowClient, EscrowRoles } from './client.js';
import { EscrowPaymentError } from './errors.js';
import { pickQuote } from './quote.js';

/** The steps of a direct call, in order. */
export const DIRECT_CALL_STEPS = ['quote', 'deploy', 'fund', 'call', 'settled'] as const;
export type DirectCallStep = (typeof DIRECT_CALL_STEPS)[number];

/** One progress report: a step starts, is done, or failed. */
export interface ProgressEvent {
  step: DirectCallStep;
  phase: 'start' | 'done' | 'failed';
  /** Milliseconds since the call started. */
  elapsedMs: number;
  escrowId?: string;
  txHash?: string;
  explorerUrl?: string;
  message?: string;
}

/** One entry of a direct call's trace. */
export interface TraceStep {
  step: DirectCallStep;
  status: 'ok' | 'failed';
  /** ISO time the step started. */
  startedAt: string;
  ms: number;
  txHash?: string;
  explorerUrl?: string;
  detail?: Record<string, string>;
  error?: string;
}

/** What a paid direct call returns. */
export interface DirectCallResult<T = unknown> {
  result: T;
  cost: { baseUnits: bigint; usdc: string; usd: number };
  escrowId: string;
  quoteId: string;
  /** The release transaction, when the service released the escrow after serving. */
  releaseTx?: string;
  explorerUrl?: string;
  trace: { steps: TraceStep[] };
}

/** The service to pay: its endpoint and the registry owner its quote must name as receiver. */
export interface PayTarget {
  /** The registry name, when known (escrow titles, error data). */
  service?: string;
  endpoint: string;
  owner: string;
}

export interface EscrowPayerOptions {
  network: NetworkConfig;
  /** The payer's key (a keypair, a wallet provider, a KMS). */
  signer: TxSigner;
  /** The escrow provider's client, or a function that gives it (called once a quote is accepted: its errors pass through unchanged). */
  escrow: EscrowClient | (() => EscrowClient);
  /** The platform treasury escrows name as platform address (5% fee) and dispute resolver. */
  platformAddress: string | (() => Promise<string>);
  /** Timeout of each request to the service, ms (default 120 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface PayOptions {
  onProgress?: (event: ProgressEvent) => void;
  /** Refuse a quote above this many base units (nothing is paid). */
  maxCost?: bigint;
  /**
   * Refuse, with `NO_DIRECT_PAYMENT` and before any escrow exists, a quote that also offers x402 `exact` into this
   * address on the payer's network (the platform treasury): the gateway's wallet path pays such a service by moving
   * the amount into credits instead, one transaction into the same treasury, refundable when the service fails.
   */
  declineExactTo?: string;
  /** Present an escrow that is already funded (e.g. after the call step failed in transit) instead of opening a new one. */
  escrowId?: string;
  signal?: AbortSignal;
  /** When the caller's call started (ms since the epoch), for `elapsedMs`; default now. */
  startedAt?: number;
}

export interface EscrowPayer {
  /** Pays one call of `target` with `body` (JSON text); a failure is an {@link EscrowPaymentError}. */
  pay<T = unknown>(target: PayTarget, body: string, options?: PayOptions): Promise<DirectCallResult<T>>;
}

/** A service's answer, read once: status, headers, the JSON body when it parses, and the raw text. */
export interface ServiceAnswer {
  status: number;
  headers: Headers;
  json: unknown;
  text: string;
}

const ErrorBodySchema = z.object({ error: z.string() });

const errorText = (e: unknown): string => (e instanceof Error && e.message ? e.message : String(e));

/** The service's `{ error }` message, or the start of its body. */
const serverMessage = (json: unknown, text: string): string => {
  const parsed = ErrorBodySchema.safeParse(json);
  return parsed.success ? parsed.data.error : text.slice(0, 300);
};

/**
 * One HTTP request to a service, with its timeout; never follows redirects;
 * the answer read once (status, headers, the JSON body when it parses, the
 * text). A request that fails to reach the service throws `networkError`'s
 * error (the payer's and `@farebox/client`'s own `NETWORK` errors).
 */
export function createServiceRequester(
  doFetch: typeof fetch,
  timeoutMs: number,
  networkError: (message: string) => Error,
): (url: string, init: RequestInit & { signal?: AbortSignal }) => Promise<ServiceAnswer> {
  return async (url, init) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res: Response;
    try {
      res = await doFetch(url, { ...init, signal, redirect: 'error' });
    } catch (e) {
      throw networkError(`request to ${url} failed: ${errorText(e)}`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, json, text };
  };
}

/**
 * Creates an escrow payer: pays Farebox services from `signer` through a
 * single-release escrow naming the service's owner.
 *
 * @example
 * const payer = createEscrowPayer({ network, signer: keypairSigner(secret), escrow, platformAddress: treasury });
 * const { result, cost } = await payer.pay({ service: 'echo', endpoint, owner }, JSON.stringify({ text: 'hi' }), { maxCost: 1_000_000n });
 */
export function createEscrowPayer(options: EscrowPayerOptions): EscrowPayer {
  const doFetch = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const platformAddress = typeof options.platformAddress === 'string' ? () => Promise.resolve(options.platformAddress as string) : options.platformAddress;
  const given = options.escrow;
  const escrow = typeof given === 'function' ? given : () => given;

  const request = createServiceRequester(doFetch, timeoutMs, (message) => new EscrowPaymentError('NETWORK', message));

  return {
    pay: (target, body, payOptions = {}) =>
      payAndCall({ net: options.network, payer: options.signer, escrow, platformAddress, request }, target, body, payOptions),
  };
}

interface PayContext {
  net: NetworkConfig;
  payer: TxSigner;
  escrow(): EscrowClient;
  platformAddress(): Promise<string>;
  request(url: string, init: RequestInit & { signal?: AbortSignal }): Promise<ServiceAnswer>;
}

const usdcText = (units: bigint) => formatAmount(units, { trim: true });

/**
 * Quote, open and fund a single-release escrow naming the service's registry
 * owner, call the service with `X-PAYMENT`, and read the release from its
 * receipt. Each step is traced and reported to `onProgress`.
 */
async function payAndCall<T>(ctx: PayContext, resolved: PayTarget, body: string, callOptions: PayOptions): Promise<DirectCallResult<T>> {
  const { net, request, payer } = ctx;
  const started = callOptions.startedAt ?? Date.now();
  const steps: TraceStep[] = [];
  const report = (event: Omit<ProgressEvent, 'elapsedMs'>) => {
    try {
      callOptions.onProgress?.({ ...event, elapsedMs: Date.now() - started });
    } catch {
      // A failing progress callback must not break a payment in flight.
    }
  };
  let escrowId: string | undefined = callOptions.escrowId;
  async function step<R>(
    name: DirectCallStep,
    fn: () => Promise<R>,
    describe: (r: R) => Omit<TraceStep, 'step' | 'status' | 'startedAt' | 'ms'> = () => ({}),
  ): Promise<R> {
    const t0 = Date.now();
    report({ step: name, phase: 'start', ...(escrowId ? { escrowId } : {}) });
    try {
      const r = await fn();
      const extra = describe(r);
      steps.push({ step: name, status: 'ok', startedAt: new Date(t0).toISOString(), ms: Date.now() - t0, ...extra });
      report({
        step: name,
        phase: 'done',
        ...(escrowId ? { escrowId } : {}),
        ...(extra.txHash ? { txHash: extra.txHash } : {}),
        ...(extra.explorerUrl ? { explorerUrl: extra.explorerUrl } : {}),
      });
      return r;
    } catch (e) {
      const err = e instanceof EscrowPaymentError ? e : new EscrowPaymentError('ESCROW', `${name} failed: ${errorText(e)}`, escrowId ? { escrowId } : {});
      if (escrowId && err.data.escrowId === undefined) err.data.escrowId = escrowId;
      steps.push({ step: name, status: 'failed', startedAt: new Date(t0).toISOString(), ms: Date.now() - t0, error: err.message });
      report({ step: name, phase: 'failed', message: err.message, ...(escrowId ? { escrowId } : {}) });
      err.data.trace = { steps: [...steps] };
      throw err;
    }
  }

  const maxCost = callOptions.maxCost;
  const signal = callOptions.signal;
  const post = (headers: Record<string, string>) =>
    request(resolved.endpoint, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, ...(signal ? { signal } : {}) });

  const quote = await step(
    'quote',
    async () => {
      const answer = await post({});
      if (answer.status !== 402) {
        throw new EscrowPaymentError(
          'QUOTE',
          `expected a 402 quote from ${resolved.endpoint}, got HTTP ${answer.status}: ${serverMessage(answer.json, answer.text)}`,
          {
            status: answer.status,
            serverMessage: serverMessage(answer.json, answer.text),
          },
        );
      }
      return pickQuote(net, answer, resolved, maxCost, callOptions.declineExactTo);
    },
    (q) => ({ detail: { amount: q.amount.toString(), payTo: q.requirement.payTo, quoteId: q.quoteId } }),
  );
  const treasury = await ctx.platformAddress();
  const quotedPlatform = quote.extra.escrow?.platformAddress;
  if (quotedPlatform !== undefined && quotedPlatform !== treasury) {
    throw new EscrowPaymentError('QUOTE', `the service expects escrows for platform ${quotedPlatform}, this client uses ${treasury}: nothing was paid`, {
      ...(resolved.service ? { service: resolved.service } : {}),
    });
  }

  const escrowApi = ctx.escrow();

  let quoteId = quote.quoteId;
  // What the escrow holds once funded: said with the way back in every error after that point.
  let locked = quote.amount;
  if (escrowId) {
    const existing = await escrowApi.getEscrows([escrowId]);
    const found = existing.find((e) => e.contractId === escrowId);
    if (!found) throw new EscrowPaymentError('ESCROW', `escrow ${escrowId} not found`, { escrowId });
    if (found.roles.receiver !== resolved.owner)
      throw new EscrowPaymentError('PAYTO_MISMATCH', `escrow ${escrowId} pays ${found.roles.receiver}, not ${resolved.owner}`, { escrowId });
    quoteId = found.engagementId;
    locked = found.balance;
  } else {
    const roles: EscrowRoles = {
      approver: resolved.owner,
      serviceProvider: resolved.owner,
      releaseSigner: resolved.owner,
      receiver: resolved.owner,
      platformAddress: treasury,
      disputeResolver: treasury,
    };
    const name = resolved.service ?? 'service';
    const deployed = await step(
      'deploy',
      () =>
        escrowApi.deployAndSend(
          {
            engagementId: quoteId,
            title: `Farebox call: ${name}`.slice(0, 100),
            description: `Farebox direct call to ${name}; quote ${quoteId}; payer ${payer.publicKey}`,
            roles,
            amount: quote.amount,
            platformFee: PLATFORM_FEE_PCT,
            milestones: [{ description: `serve one call of ${name}` }],
            trustline: { address: net.usdc.contractId, symbol: 'USDC', decimals: 7 },
          },
          payer,
        ),
      (r) => ({ txHash: r.txHash, explorerUrl: net.explorer.tx(r.txHash), detail: { escrowId: r.contractId } }),
    );
    escrowId = deployed.contractId;
    await step(
      'fund',
      () => escrowApi.run('fundEscrow', { contractId: deployed.contractId, signer: payer.publicKey, amount: quote.amount }, payer),
      (r) => ({ txHash: r.txHash, explorerUrl: net.explorer.tx(r.txHash), detail: { amount: quote.amount.toString() } }),
    );
  }
  const paidEscrow = escrowId;
  const wayBack = (holds: string) =>
    `escrow ${paidEscrow} ${holds} ${usdcText(locked)} USDC: get it back with a dispute, client.dispute('${paidEscrow}') or \`farebox dispute ${paidEscrow} --keypair <payer key file>\``;

  const served = await step(
    'call',
    async () => {
      const lockedData = { escrowId: paidEscrow, lockedBaseUnits: locked.toString(), ...(resolved.service ? { service: resolved.service } : {}) };
      let answer;
      try {
        answer = await post({ [X402_HEADERS.payment]: encodePaymentHeader({ escrowId: paidEscrow, network: net.x402Network, quoteId }, 1) });
      } catch (e) {
        // No answer: the service may or may not have served (and released) it.
        const reason = `no answer to the call paid with escrow ${paidEscrow}: ${errorText(e)}`;
        throw new EscrowPaymentError(
          e instanceof EscrowPaymentError ? e.code : 'NETWORK',
          `${reason}; ${wayBack('may still hold')} (refused if it was served)`,
          { ...lockedData, reason },
        );
      }
      if (answer.status === 200) return answer;
      const msg = serverMessage(answer.json, answer.text);
      const data = { status: answer.status, serverMessage: msg, ...lockedData };
      if (answer.status === 402 || answer.status === 409) {
        const reason = `the service refused escrow ${paidEscrow}: ${msg}`;
        throw new EscrowPaymentError('PAYMENT_REFUSED', `${reason}; ${wayBack('still holds')}`, { ...data, reason });
      }
      const reason = `the service failed after escrow ${paidEscrow} was funded (HTTP ${answer.status}): ${msg}`;
      throw new EscrowPaymentError('SERVICE', `${reason}; ${wayBack('still holds')}`, { ...data, reason });
    },
    () => ({ detail: { escrowId: paidEscrow } }),
  );

  let releaseTx: string | undefined;
  await step(
    'settled',
    async () => {
      const header = served.headers.get(X402_HEADERS.paymentResponse) ?? served.headers.get(X402_HEADERS.paymentResponseV2);
      if (!header) return undefined;
      try {
        const receipt = decodePaymentResponse(header);
        if (receipt.success && receipt.transaction !== paidEscrow) releaseTx = receipt.transaction;
      } catch {
        // An unreadable receipt does not undo a served call.
      }
      return undefined;
    },
    () => (releaseTx ? { txHash: releaseTx, explorerUrl: net.explorer.tx(releaseTx) } : { detail: { released: 'unconfirmed' } }),
  );

  return {
    result: served.json as T,
    cost: { baseUnits: quote.amount, usdc: formatAmount(quote.amount, { trim: true }), usd: toUsd(quote.amount) },
    escrowId: paidEscrow,
    quoteId,
    ...(releaseTx ? { releaseTx, explorerUrl: net.explorer.tx(releaseTx) } : {}),
    trace: { steps },
  };
}
