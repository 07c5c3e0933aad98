// The provider's `exact` call path. By default (`settle: 'after-handler'`) the
// payment is checked, verified and recorded once, the handler runs, and the
// facilitator settles it only when the handler answered (below 400, in time):
// a failed handler moves no money, and a settlement that fails withholds the
// answer. With `settle: 'before-handler'` it is settled before the handler
// runs. A settled answer carries PAYMENT-RESPONSE (and X-PAYMENT-RESPONSE when
// the payment came in X-PAYMENT).
import { X402_HEADERS, formatAmount } from '@farebox/protocol';
import type { ResolvedProviderConfig } from './config.js';
import type { ExactAccepted, ExactPayments, ExactRefusal, ExactSettled } from './exact.js';
import type { CallContext, HeadersInput, PaidRequest } from './provider.js';
import { fail, type ProviderResponse } from './response.js';

/** What the call path takes from the provider. */
export interface ExactCallDeps {
  config: ResolvedProviderConfig;
  exact: ExactPayments | undefined;
  quote(price: bigint, headers: HeadersInput | undefined, error?: string, more?: { message?: string; header?: string }): Promise<ProviderResponse>;
  checkRegistration(): Promise<string | null>;
  run(payload: unknown, context: CallContext): Promise<{ ok: boolean; response: ProviderResponse }>;
  /** The resource the 402 names for this request. */
  resource: string;
}

type Outcome = { ok: boolean; response: ProviderResponse };

const errorOf = (response: ProviderResponse) => String((response.body as { error?: unknown } | null)?.error ?? `HTTP ${response.status}`);

/** The handler's outcome, or a 504 once `seconds` have passed (its late result is then dropped). */
async function runWithin(outcome: Promise<Outcome>, seconds: number, service: string): Promise<Outcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, response: fail(504, `${service} did not answer within ${seconds} s`) }), seconds * 1000);
  });
  return Promise.race([outcome, late]).finally(() => clearTimeout(timer));
}

/** The answer to a refused payment, or to a settlement that failed. */
function refused(deps: ExactCallDeps, refusal: ExactRefusal, price: bigint, request: PaidRequest): Promise<ProviderResponse> | ProviderResponse {
  if (refusal.status !== 402) return fail(refusal.status, refusal.message);
  return deps.quote(price, request.headers, refusal.reason, { message: refusal.message, ...(refusal.header ? { header: refusal.header } : {}) });
}

function receipt(settled: ExactSettled, v1Header: boolean): Record<string, string> {
  return { [X402_HEADERS.paymentResponseV2]: settled.header, ...(v1Header ? { [X402_HEADERS.paymentResponse]: settled.header } : {}) };
}

/** An `exact` payment: accepted (checked, verified, recorded once), then settled after the handler answered, or before it runs. */
export async function exactCall(
  deps: ExactCallDeps,
  value: string,
  v1Header: boolean,
  payload: unknown,
  price: bigint,
  request: PaidRequest,
): Promise<ProviderResponse> {
  const { config, exact, quote, checkRegistration } = deps;
  if (!exact || !config.exact) {
    return quote(price, request.headers, 'unsupported_scheme', { message: `${config.service} takes no exact payment on ${config.x402Network}` });
  }
  const registrationError = await checkRegistration();
  if (registrationError) return fail(503, registrationError);
  const accepted = await exact.accept(value, price, deps.resource);
  if (!accepted.ok) return refused(deps, accepted, price, request);
  if (config.exact.settle === 'before-handler') return settleFirst(deps, exact, accepted, v1Header, payload, price, request);

  const outcome = await runWithin(
    deps.run(payload, { paidWith: 'exact', amount: accepted.amount, price, payer: accepted.payer, ...(request.ip !== undefined ? { ip: request.ip } : {}) }),
    config.exact.maxTimeoutSeconds,
    config.service,
  );
  if (!outcome.ok || outcome.response.status >= 400) {
    const error = errorOf(outcome.response);
    await exact.unused(accepted.key, error);
    outcome.response.body = {
      error: `${error}; nothing was charged: the payment was not settled`,
      payment: {
        settled: false,
        charged: '0',
        payer: accepted.payer,
        network: config.x402Network,
        note: `${config.service} failed before the payment was settled, so nothing moved from ${accepted.payer}: the signed authorization (${formatAmount(price, { trim: true })} USDC, valid through ledger ${accepted.expiresAfterLedger}) was not submitted, and ${config.service} refuses it from now on; sign a new payment to try again`,
      },
    };
    return outcome.response;
  }
  const settled = await exact.settle(accepted);
  if (!settled.ok) {
    // The answer is not handed out unpaid: the reference's 402 with the failed settlement, the handler's result withheld.
    const withheld =
      settled.status === 402
        ? `${config.service} answered, but the payment could not be settled (${settled.message}): the answer is withheld and nothing was charged; pay again with a new authorization`
        : `${settled.message}; ${config.service}'s answer is withheld`;
    return refused(deps, { ...settled, message: withheld }, price, request);
  }
  Object.assign(outcome.response.headers, receipt(settled, v1Header));
  return outcome.response;
}

/**
 * `settle: 'before-handler'`: settled, then the handler runs. A failure after settlement is refunded in full through the
 * platform's facilitator (`POST /x402/refund`, signed by the owner's key): the answer names the refund transaction. With
 * another facilitator, or when the refund is refused, the answer says so and the refund is the owner's, by hand.
 */
async function settleFirst(
  deps: ExactCallDeps,
  exact: ExactPayments,
  accepted: ExactAccepted,
  v1Header: boolean,
  payload: unknown,
  price: bigint,
  request: PaidRequest,
): Promise<ProviderResponse> {
  const { config } = deps;
  const settled = await exact.settle(accepted);
  if (!settled.ok) return refused(deps, settled, price, request);
  const outcome = await deps.run(payload, {
    paidWith: 'exact',
    amount: accepted.amount,
    price,
    transaction: settled.transaction,
    payer: settled.payer,
    ...(request.ip !== undefined ? { ip: request.ip } : {}),
  });
  Object.assign(outcome.response.headers, receipt(settled, v1Header));
  if (!outcome.ok || outcome.response.status >= 400) {
    const error = errorOf(outcome.response);
    await exact.handlerFailed(accepted.key, error);
    const refund = exact.refund ? await exact.refund(accepted.key, settled) : undefined;
    const paid = { transaction: settled.transaction, network: settled.network, payer: settled.payer, amount: accepted.amount.toString() };
    if (refund?.refunded) {
      outcome.response.body = {
        error: `${error}; the payment was refunded in full`,
        payment: {
          settled: true,
          refunded: true,
          refund_transaction: refund.transaction,
          ...paid,
          charged: '0',
          note: `${config.service} settles before its handler runs and failed after the payment was settled: ${formatAmount(accepted.amount, { trim: true })} USDC went back to ${settled.payer} in transaction ${refund.transaction}; nothing was charged`,
        },
      };
      return outcome.response;
    }
    if (refund) {
      outcome.response.body = {
        error,
        payment: {
          settled: true,
          refunded: false,
          ...paid,
          refund: refund.pending
            ? `the refund is recorded and its transfer back to ${settled.payer} is not confirmed yet: the platform finishes it (${refund.message})`
            : `the automatic refund was refused (${refund.reason}: ${refund.message}): ask ${config.service}'s owner for a refund`,
        },
      };
      return outcome.response;
    }
    outcome.response.body = {
      error,
      payment: {
        settled: true,
        transaction: settled.transaction,
        network: settled.network,
        payer: settled.payer,
        amount: accepted.amount.toString(),
        refund: `the payment was settled before the service failed (${config.service} settles before its handler runs); it is recorded with its transaction: ask ${config.service}'s owner for a refund`,
      },
    };
  }
  return outcome.response;
}
