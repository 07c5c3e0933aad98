import { EXACT_NETWORKS, parseAmount } from '@farebox/protocol';
import { createEscrowPayer, EscrowPaymentError } from '@farebox/escrow';
import { ClientError } from '../errors.js';
import { requireSigner, type DirectContext } from './context.js';
import { resolveTarget, verifyManifest } from './endpoint.js';
import { exactOffer, payExact } from './exact.js';
import { errorText } from './http.js';
import type { CallOptions, DirectCallResult, ServiceTarget } from './types.js';

function parseMax(value: number | string): bigint {
  try {
    return parseAmount(value);
  } catch (e) {
    throw new ClientError('CONFIG', `maxCost: ${errorText(e)}`);
  }
}

/**
 * `FareboxClient.call`: resolves the target in the registry (and checks its
 * `/manifest` when asked), then pays it with `exact` when the service offers it
 * on this network and the key can sign authorization entries; else with
 * `@farebox/escrow`'s payer: quote,
 * open and fund a single-release escrow naming the service's registry owner,
 * call the service with `X-PAYMENT`, and read the release from its receipt.
 * The payer's errors come out as {@link ClientError}s with the same code,
 * message and data.
 */
export async function payAndCall<T>(ctx: DirectContext, target: ServiceTarget, payload: unknown, callOptions: CallOptions = {}): Promise<DirectCallResult<T>> {
  const signer = requireSigner(ctx);
  const startedAt = Date.now();
  let body: string;
  try {
    body = JSON.stringify(payload ?? null);
  } catch (e) {
    throw new ClientError('CONFIG', `payload is not JSON-serialisable: ${errorText(e)}`);
  }
  const maxCost = callOptions.maxCost !== undefined ? parseMax(callOptions.maxCost) : undefined;
  const resolved = await resolveTarget(target, ctx.registryApi);
  if (ctx.verifyEndpoint) await verifyManifest(ctx.request, resolved, callOptions.signal);
  if (ctx.authSigner && callOptions.escrowId === undefined && (EXACT_NETWORKS as readonly string[]).includes(ctx.net.x402Network)) {
    const quoteStart = Date.now();
    const answer = await ctx.request(resolved.endpoint, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
      ...(callOptions.signal ? { signal: callOptions.signal } : {}),
    });
    const found = answer.status === 402 ? exactOffer(ctx.net, answer) : undefined;
    if (found) {
      const { maxCost: _given, ...rest } = callOptions;
      return payExact<T>(ctx, ctx.authSigner, resolved, body, found, {
        ...rest,
        startedAt,
        quoteMs: Date.now() - quoteStart,
        ...(maxCost !== undefined ? { maxCost } : {}),
      });
    }
  }
  const payer = createEscrowPayer({
    network: ctx.net,
    signer,
    escrow: ctx.escrowApi,
    platformAddress: ctx.platformAddress,
    timeoutMs: ctx.timeoutMs,
    fetch: ctx.fetch,
  });
  try {
    const paid = await payer.pay<T>(resolved, body, {
      startedAt,
      ...(maxCost !== undefined ? { maxCost } : {}),
      ...(callOptions.onProgress ? { onProgress: callOptions.onProgress } : {}),
      ...(callOptions.escrowId !== undefined ? { escrowId: callOptions.escrowId } : {}),
      ...(callOptions.signal ? { signal: callOptions.signal } : {}),
    });
    return { ...paid, scheme: 'escrow' };
  } catch (err) {
    if (err instanceof EscrowPaymentError) throw new ClientError(err.code, err.message, { ...err.data }, { cause: err });
    throw err;
  }
}
