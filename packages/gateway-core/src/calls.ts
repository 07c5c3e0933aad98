import { base64UrlEncode, CERTIFICATE_HEADER, costObject, parseAmount, parsePaymentRequired, randomBytes } from '@farebox/protocol';
import { inputs } from '@farebox/contract';
import type { Principal } from './auth/accounts.js';
import { createCertificateIssuer } from './certificates.js';
import { round, Timeline } from './call-timeline.js';
import type { CallableService, CallAnswer, CallFailureBody, CallOptions, CallResponse, CallResultBody, CallsOptions, CallSummary } from './call-types.js';
import { systemClock } from './clock.js';
import { GatewayError, HTTP_STATUS } from './errors.js';
import { ChargePendingError } from './db-errors.js';
import { checkEndpoint, guardedDispatcher } from './security/endpoint-guard.js';
import { formatUsd, messageOf, networkReason, overMaxCost, refundedToCredits } from './call-wording.js';
import { targetOf, UpstreamError } from './call-upstream.js';

export { refundedToCredits };

export type {
  CallOptions,
  CallableService,
  CreditsPort,
  TraceStep,
  CallResponse,
  CallResultBody,
  CallFailureBody,
  CallAnswer,
  CallsOptions,
  CallSummary,
} from './call-types.js';

/** A call answer from its JSON text; `value` is read from the text only when asked for (replays, the wallet path). */
function answerFrom(response: CallResponse, value?: CallResultBody | CallFailureBody): CallAnswer {
  let parsed = value;
  return {
    ok: response.status === 200,
    status: response.status,
    json: response.body,
    get value() {
      return (parsed ??= JSON.parse(response.body) as CallResultBody | CallFailureBody);
    },
  } as CallAnswer;
}

/** A certificate signed during the hold is sent when the hold took less than this (by the gateway's clock); else one is signed anew. */
const FRESH_CERTIFICATE_MS = 5_000;

/** `mode` values of a call result (documented in docs/api.md). */
export const CALL_MODES = { platformSigned: 'platform-signed', walletEscrow: 'wallet-escrow' } as const;

export { CALL_STEPS, type CallStep } from './call-timeline.js';

/**
 * The body of `POST /v1/call`, checked by the contract's schema (the one
 * definition, with the spec's messages). An unknown field is named first:
 * the spec refuses any field besides service and payload before anything else.
 */
export function validateCallBody(body: unknown): { service: string; payload: Record<string, unknown> } {
  const r = inputs.CallBody.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues.find((x) => x.code === 'unrecognized_keys') ?? r.error.issues[0];
  throw new GatewayError('BAD_REQUEST', issue?.message ?? 'invalid call body');
}

/** What a call's summary needs from its payment: the price charged and whether the wallet paid. */
interface ChargeContext {
  amount: bigint;
  wallet: boolean;
  /** Told the call's answer when it comes only after the call returned (a charge that waited for the database). */
  later: ((answer: Promise<CallAnswer | undefined>) => void) | undefined;
  /** The service's owner, once resolved (a call by the owner is left out of the service's health). */
  owner?: string;
}

/**
 * Platform-signed calls: hold the price, sign a certificate over the exact
 * bytes, call the service, then post (success) or void (any failure, a
 * refund). Price and payee come from the registry; a dynamic price is
 * accepted from the service's 402 quote only upward and within limits.
 */
export function createCalls(options: CallsOptions) {
  // Every connection is checked again (addresses and port), whatever DNS answered when the endpoint was vetted.
  const dispatcher = guardedDispatcher(options.policy, {
    keepAliveTimeout: 10_000,
    connections: 256,
    pipelining: 1,
  });
  const maxResponseBytes = options.maxResponseBytes ?? 5 * 1024 * 1024;
  const now = options.now ?? systemClock;
  const endpointChecks = new Map<string, { ok: boolean; message?: string; until: number }>();
  const certificates = createCertificateIssuer(options.signer);

  async function vetEndpoint(endpoint: string) {
    const cached = endpointChecks.get(endpoint);
    if (cached && cached.until > now()) {
      if (!cached.ok) throw new UpstreamError(cached.message!);
      return;
    }
    try {
      await checkEndpoint(endpoint, options.policy);
      endpointChecks.set(endpoint, { ok: true, until: now() + 60_000 });
    } catch (err) {
      const message = `service endpoint refused: ${(err as Error).message}`;
      endpointChecks.set(endpoint, { ok: false, message, until: now() + 60_000 });
      throw new UpstreamError(message);
    }
  }

  /** The certificate for `amount`, signed at the end of this turn of the event loop, with the other certificates asked for in it. */
  function signSoon(svc: CallableService, bodyBytes: Buffer, amount: bigint, callId: string): Promise<string> {
    // Issued at the gateway's time: the certificate's iat and expiry, and the freshness rule below, read one clock.
    const signed = certificates.issue(svc.endpoint, { service: svc.service, body: bodyBytes, amount, callId, now: Math.floor(now() / 1000) });
    // A call refused before it reaches the service never reads it.
    signed.catch(() => undefined);
    return signed;
  }

  /** The service's answer: checked to be JSON, kept as the text it sent (forwarded as is, never re-serialised). */
  async function send(
    svc: CallableService,
    bodyBytes: Buffer,
    amount: bigint,
    callId: string,
    requestId: string | undefined,
    certificate?: Promise<string>,
  ): Promise<{ text: string; json: unknown }> {
    const header = await (certificate ?? signSoon(svc, bodyBytes, amount, callId));
    // X-Request-Id: the caller's request id, for the service's logs (not part of the signed bytes).
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      [CERTIFICATE_HEADER]: header,
      'farebox-call-id': callId,
    };
    if (requestId) headers['x-request-id'] = requestId;
    let res = await exchange(svc.endpoint, bodyBytes, headers);
    if (!certificates.noteAnswer(svc.endpoint, res.headers) && res.status === 401 && certificates.isBatchSigned(header)) {
      // The service no longer verifies batch-signed certificates (an older provider answers there now): once more, with a v1 certificate.
      headers[CERTIFICATE_HEADER] = await signSoon(svc, bodyBytes, amount, callId);
      res = await exchange(svc.endpoint, bodyBytes, headers);
      certificates.noteAnswer(svc.endpoint, res.headers);
    }
    const text = res.body.toString('utf8');
    let json: unknown;
    let parsed = true;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = false;
    }
    if (res.status === 402) {
      let quote: bigint | undefined;
      try {
        // The price: the first offer's amount, or the top-level one of a service that takes no direct payment (no offers).
        quote = parsePaymentRequired({ headers: res.headers, body: json }).price;
      } catch {
        quote = undefined;
      }
      throw new UpstreamError(`service refused payment (402)${messageOf(json)}`, quote);
    }
    if (res.status < 200 || res.status >= 300) throw new UpstreamError(`service error ${res.status}${messageOf(json)}`);
    if (!parsed || json === undefined) throw new UpstreamError('service returned invalid JSON');
    return { text, json };
  }

  /**
   * One POST to a service through the guarded dispatcher, read whole (at most
   * `maxResponseBytes`) within the deadline (`timeoutMs` for the whole
   * exchange, a timer cleared once the answer is read). Undici's `dispatch`
   * with a handler, not `request`: no body stream, abort signal or promise per
   * chunk; measured on loopback, 21-30 µs of CPU per request against 54-87 µs.
   */
  function exchange(
    endpoint: string,
    body: Buffer,
    headers: Record<string, string>,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    const target = targetOf(endpoint);
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let status = 0;
      let responseHeaders: Record<string, string> = {};
      let started = false;
      let controller: { abort(reason: Error): void } | undefined;
      let failure: Error | undefined;
      // The first failure settles the exchange at once, also before undici has started the request (its start aborts it then).
      const stop = (error: Error) => {
        failure ??= error;
        clearTimeout(timer);
        reject(failure);
        controller?.abort(failure);
      };
      const timedOut = () => new UpstreamError(`service timed out after ${options.timeoutMs} ms`);
      const timer = setTimeout(() => stop(timedOut()), options.timeoutMs);
      dispatcher.dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers, body, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs },
        {
          onRequestStart(c) {
            controller = c;
            if (failure) c.abort(failure);
          },
          onResponseStart(_c, statusCode, h) {
            started = true;
            status = statusCode;
            responseHeaders = h as Record<string, string>;
          },
          onResponseData(_c, chunk) {
            size += chunk.length;
            if (size > maxResponseBytes) return stop(new UpstreamError('service response too large'));
            chunks.push(chunk);
          },
          onResponseEnd() {
            clearTimeout(timer);
            if (failure) return reject(failure);
            resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks, size) });
          },
          onResponseError(_c, err) {
            clearTimeout(timer);
            if (failure) return reject(failure);
            const e = err as { code?: string; message?: string; cause?: { code?: string } };
            // Once the answer has started, a broken body is as good as a late one.
            if (started || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return reject(timedOut());
            reject(new UpstreamError(`service unreachable: ${networkReason(e.cause?.code ?? e.code, e.message)}`));
          },
        },
      );
    });
  }

  async function run(
    principal: Principal,
    service: string,
    payload: Record<string, unknown>,
    maxCost: bigint | undefined,
    idempotencyKey: string | undefined,
    requestId: string | undefined,
    later?: ChargeContext['later'],
  ): Promise<CallAnswer> {
    const timeline = new Timeline(now);
    const callId = `call_${base64UrlEncode(randomBytes(12))}`;
    const ctx: ChargeContext = { amount: 0n, wallet: false, later };
    if (!options.onFinished) return charge(principal, service, payload, maxCost, idempotencyKey, requestId, timeline, callId, ctx).catch(withCallId(callId));
    const t0 = performance.now();
    // The summary is taken now and reported (log line, metrics) once the caller's answer is on its way.
    const finish = (status: number, outcome: CallSummary['outcome'], paidWith: CallSummary['paidWith'], error?: string) => {
      const summary: CallSummary = {
        callId,
        requestId,
        accountId: principal.user.id,
        service,
        amount: ctx.amount,
        outcome,
        paidWith,
        status,
        totalMs: round(performance.now() - t0),
        steps: timeline.steps.map((x) => ({ name: x.name, status: x.status, durationMs: x.durationMs })),
        ...(error ? { error } : {}),
        ...(ctx.owner !== undefined && ctx.owner === principal.user.walletAddress ? { ownCall: true } : {}),
      };
      setImmediate(options.onFinished!, summary);
    };
    try {
      const response = await charge(principal, service, payload, maxCost, idempotencyKey, requestId, timeline, callId, ctx);
      const charged = response.status === 200;
      // A failed wallet payment refunds its escrow itself; a failed credit call voids its hold (`refund`).
      const refunded = ctx.wallet || timeline.steps.some((x) => x.name === 'refund');
      finish(
        response.status,
        charged ? 'ok' : refunded ? 'refunded' : 'refused',
        charged ? (ctx.wallet ? 'wallet' : 'credit') : 'none',
        response.ok ? undefined : response.value.error,
      );
      return response;
    } catch (err) {
      finish(err instanceof GatewayError ? HTTP_STATUS[err.code] : 500, 'refused', 'none', (err as Error).message);
      return withCallId(callId)(err);
    }
  }

  async function charge(
    principal: Principal,
    service: string,
    payload: Record<string, unknown>,
    maxCost: bigint | undefined,
    idempotencyKey: string | undefined,
    requestId: string | undefined,
    timeline: Timeline,
    callId: string,
    ctx: ChargeContext,
  ): Promise<CallAnswer> {
    const svc = await timeline.step(
      'resolve_service',
      async () => {
        const found = await options.resolveService(service);
        if (!found) throw new GatewayError('NOT_FOUND', 'service not found');
        return found;
      },
      (s) => ({ service: s.service, owner: s.owner, floor: s.pricePerCall.toString() }),
    );
    const bodyBytes = Buffer.from(JSON.stringify(payload));
    let amount = svc.pricePerCall;
    ctx.amount = amount;
    ctx.owner = svc.owner;
    if (maxCost !== undefined && amount > maxCost) throw new GatewayError('BAD_REQUEST', overMaxCost(service, amount, maxCost));
    // The hold of `amount` (as it is then) for the call's credential (its spending policy sets `budget`): one shape for every call.
    const key = idempotencyKey || undefined;
    const holdOf = (id: string) =>
      options.credits.hold({ accountId: principal.user.id, amount, callId: id, service, principal, idempotencyKey: key, budget: undefined });
    const holdCredits = () =>
      timeline.step(
        'hold_credits',
        () => holdOf(callId),
        () => ({ amount: amount.toString() }),
      );
    const holding = holdCredits();
    // Signed while the hold's statement is at the database (asked for after it, so the statement goes first).
    const certificate = signSoon(svc, bodyBytes, amount, callId);
    const signedAt = now();
    let holdId: string;
    try {
      ({ holdId } = await holding);
    } catch (err) {
      if (!(err instanceof GatewayError && err.code === 'INSUFFICIENT_BALANCE' && options.onInsufficientCredits)) throw err;
      const other = await options.onInsufficientCredits({ principal, service: svc, payload, amount, callId, idempotencyKey: key, steps: timeline.steps });
      if ('response' in other) {
        ctx.wallet = true;
        return answerFrom(other.response);
      }
      ({ holdId } = await holdCredits());
    }
    let result: { text: string; json: unknown };
    try {
      await vetEndpoint(svc.endpoint);
      try {
        result = await timeline.step(
          'call_service',
          () => send(svc, bodyBytes, amount, callId, requestId, now() - signedAt < FRESH_CERTIFICATE_MS ? certificate : undefined),
          () => ({ endpoint: svc.endpoint }),
        );
      } catch (err) {
        const quote = err instanceof UpstreamError ? err.quote : undefined;
        const ceiling = [svc.pricePerCall * BigInt(options.maxPriceMultiple), ...(maxCost !== undefined ? [maxCost] : [])].reduce((a, b) => (a < b ? a : b));
        if (quote === undefined || quote <= amount) throw err;
        if (quote > ceiling) throw new UpstreamError(`service asked ${formatUsd(quote)} USDC, above the limit of ${formatUsd(ceiling)} USDC for this call`);
        // Dynamic price: re-hold the quoted amount and call again with a certificate for it.
        await timeline.step('void_hold', () => options.credits.void(holdId, 'repriced'));
        holdId = '';
        amount = quote;
        ctx.amount = amount;
        ({ holdId } = await timeline.step(
          'hold_credits',
          () => holdOf(`${callId}.2`),
          () => ({ amount: amount.toString(), repriced: true }),
        ));
        result = await timeline.step(
          'call_service',
          () => send(svc, bodyBytes, amount, callId, requestId),
          () => ({ endpoint: svc.endpoint, repriced: true }),
        );
      }
    } catch (err) {
      if (holdId) await timeline.step('refund', () => options.credits.void(holdId, (err as Error).message.slice(0, 200)));
      if (err instanceof UpstreamError || err instanceof GatewayError) {
        if (err instanceof GatewayError && err.code === 'INSUFFICIENT_BALANCE') throw err;
        // What happened to the money follows the reason: the hold was voided, the charge is back in credits.
        const failure: CallFailureBody = {
          error: `${err.message}${holdId ? refundedToCredits(amount) : ''}`,
          code: 'UPSTREAM',
          callId,
          ...(holdId ? { refunded: true } : {}),
          trace: { steps: timeline.steps },
        };
        return answerFrom({ status: 500, body: JSON.stringify(failure) }, failure);
      }
      throw err;
    }
    let posted: { balance: bigint };
    try {
      posted = await timeline.step(
        'post_payment',
        () => options.credits.post(holdId, { publisherOwner: svc.owner, service: svc.service, gross: amount }),
        () => ({ amount: amount.toString(), payee: svc.owner }),
      );
    } catch (err) {
      // The charge waits for the database (503, charge pending): once the post is recorded, the answer it would have
      // had now is stored under the call's key; a hold not posted (the reaper refunded it) releases the key.
      if (err instanceof ChargePendingError && ctx.later)
        ctx.later(err.outcome.then((p) => (p?.posted ? paid(callId, amount, p.balance, result, timeline) : undefined)));
      throw err;
    }
    return paid(callId, amount, posted.balance, result, timeline);
  }

  /** A call through the confirmation gate: the price capped by what may be charged unconfirmed or was approved; a refund gives the approval back. */
  async function gated(
    gate: NonNullable<CallsOptions['gate']>,
    principal: Principal,
    service: string,
    payload: Record<string, unknown>,
    maxCost: bigint | undefined,
    opts: CallOptions,
    key: string | undefined,
    later: ChargeContext['later'],
  ): Promise<CallAnswer> {
    const { ceiling, failed } = await gate(principal, service, opts.approvalId);
    const cap = ceiling === undefined || (maxCost !== undefined && maxCost < ceiling) ? maxCost : ceiling;
    const answer = await run(principal, service, payload, cap, key, opts.requestId, later);
    if (!answer.ok && failed) await failed();
    return answer;
  }

  /** The 200 answer of a credit call whose hold was posted. */
  function paid(callId: string, amount: bigint, balance: bigint, result: { text: string; json: unknown }, timeline: Timeline): CallAnswer {
    const rest = {
      cost: costObject(amount),
      paidWith: 'credit' as const,
      mode: CALL_MODES.platformSigned,
      newBalance: costObject(balance),
      callId,
      trace: { steps: timeline.steps },
    };
    // The JSON text carries the service's result as the bytes it sent; the value, as it parsed.
    return answerFrom({ status: 200, body: `{"result":${result.text},${JSON.stringify(rest).slice(1)}` }, { result: result.json, ...rest });
  }

  return {
    /** Vets the service's endpoint and sends it the call under a certificate for `amount` (the MPP channel path: mpp/calls.ts). */
    async deliver(svc: CallableService, payload: Record<string, unknown>, amount: bigint, callId: string, requestId?: string) {
      await vetEndpoint(svc.endpoint);
      return send(svc, Buffer.from(JSON.stringify(payload)), amount, callId, requestId);
    },
    resolveService: options.resolveService,
    /** `POST /v1/call`. Validation errors throw before anything is charged; service failures answer 500 after the refund. */
    async call(principal: Principal, body: unknown, opts: CallOptions = {}): Promise<CallAnswer> {
      const { service, payload } = validateCallBody(body);
      let maxCost: bigint | undefined;
      if (opts.maxCost !== undefined) {
        try {
          maxCost = parseAmount(opts.maxCost);
        } catch {
          throw new GatewayError('BAD_REQUEST', 'invalid Farebox-Max-Cost (a USD amount)');
        }
      }
      // An OAuth connection's call the person must confirm first (every door but /mcp's own flow, which confirmed it).
      const gate = options.gate && principal.via === 'oauth' && !opts.confirmed ? options.gate : undefined;
      const attempt = (key: string | undefined, later?: ChargeContext['later']) =>
        gate ? gated(gate, principal, service, payload, maxCost, opts, key, later) : run(principal, service, payload, maxCost, key, opts.requestId, later);
      if (!opts.idempotencyKey) return attempt(undefined);
      const requestHash = JSON.stringify([service, payload, opts.maxCost ?? null]);
      // The answer is stored as its JSON text; a replay gives back that text (and its value, read from it).
      let fresh: CallAnswer | undefined;
      const stored = await options.credits.idempotent(principal.user.id, opts.idempotencyKey, requestHash, async (claim) => {
        fresh = await attempt(opts.idempotencyKey, (answer) => claim.later(answer.then((a) => a && { status: a.status, body: a.json })));
        return { status: fresh.status, body: fresh.json };
      });
      if (fresh !== undefined && fresh.json === stored.body) return fresh;
      // A replay obeys the credential that sends it: its allowlist and per-call maximum (docs/api.md, "Idempotent retries").
      const replay = answerFrom(stored);
      if (principal.policy && options.admitReplay) await options.admitReplay(principal, service, replay.ok ? BigInt(replay.value.cost.base_units) : 0n);
      return replay;
    },
    async close() {
      await dispatcher.close();
    },
  };
}

const callIds = new WeakMap<object, string>();

/** The id of the call that `err` (thrown by `calls.call`) ended, once the call had one: its error answer's `callId`. */
export function callIdOf(err: unknown): string | undefined {
  if (err instanceof GatewayError && typeof err.data?.callId === 'string') return err.data.callId;
  return err !== null && typeof err === 'object' ? callIds.get(err) : undefined;
}

/** A refusal once the call has its id carries it (`data.callId`; any other error: {@link callIdOf}). */
const withCallId =
  (callId: string) =>
  (err: unknown): never => {
    if (err instanceof GatewayError && err.data?.callId === undefined)
      throw new GatewayError(err.code, err.message, { ...err.data, callId }, err.headers, { cause: err });
    if (err !== null && typeof err === 'object' && !(err instanceof GatewayError)) callIds.set(err, callId);
    throw err;
  };
