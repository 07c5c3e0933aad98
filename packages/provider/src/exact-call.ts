// The provider's `exact` call path: the payment is checked, verified and
// settled by the facilitator before the handler runs; the answer carries
// PAYMENT-RESPONSE (and X-PAYMENT-RESPONSE when it came in X-PAYMENT).
import { X402_HEADERS } from '@farebox/protocol';
import type { ResolvedProviderConfig } from './config.js';
import type { ExactPayments } from './exact.js';
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

/** An `exact` payment: checked, verified and settled by the facilitator before the handler runs; answered with PAYMENT-RESPONSE. */
export async function exactCall(
  deps: ExactCallDeps,
  value: string,
  v1Header: boolean,
  payload: unknown,
  price: bigint,
  request: PaidRequest,
): Promise<ProviderResponse> {
  const { config, exact, quote, checkRegistration, run } = deps;
  if (!exact) return quote(price, request.headers, 'unsupported_scheme', { message: `${config.service} takes no exact payment on ${config.x402Network}` });
  const registrationError = await checkRegistration();
  if (registrationError) return fail(503, registrationError);
  const paid = await exact.pay(value, price, deps.resource);
  if (!paid.ok) {
    if (paid.status !== 402) return fail(paid.status, paid.message);
    return quote(price, request.headers, paid.reason, { message: paid.message, ...(paid.header ? { header: paid.header } : {}) });
  }
  const receipt = { [X402_HEADERS.paymentResponseV2]: paid.header, ...(v1Header ? { [X402_HEADERS.paymentResponse]: paid.header } : {}) };
  const outcome = await run(payload, {
    paidWith: 'exact',
    amount: paid.amount,
    price,
    transaction: paid.transaction,
    payer: paid.payer,
    ...(request.ip !== undefined ? { ip: request.ip } : {}),
  });
  Object.assign(outcome.response.headers, receipt);
  if (!outcome.ok) {
    const error = String((outcome.response.body as { error?: unknown }).error);
    await exact.handlerFailed(paid.key, error);
    outcome.response.body = {
      error,
      payment: {
        settled: true,
        transaction: paid.transaction,
        network: paid.network,
        payer: paid.payer,
        amount: paid.amount.toString(),
        refund: `the payment was settled before the service failed; it is recorded with its transaction: ask ${config.service}'s owner for a refund`,
      },
    };
  }
  return outcome.response;
}
