import { PLATFORM_FEE_PCT, X402_HEADERS, decodePaymentResponse, encodePaymentHeader, formatAmount, toUsd } from '@farebox/protocol';
import type { EscrowRoles } from '@farebox/escrow';
import { ClientError } from '../errors.js';
import { requireSigner, type DirectContext } from './context.js';
import { resolveTarget, verifyManifest } from './endpoint.js';
import { errorText, serverMessage } from './http.js';
import { parseMax, pickQuote } from './quote.js';
import type { CallOptions, DirectCallResult, DirectCallStep, ProgressEvent, ServiceTarget, TraceStep } from './types.js';

const usdcText = (units: bigint) => formatAmount(units, { trim: true });

/**
 * `FareboxClient.call`: quote, open and fund a single-release escrow naming the
 * service's registry owner, call the service with `X-PAYMENT`, and read the
 * release from its receipt. Each step is traced and reported to `onProgress`.
 */
export async function payAndCall<T>(ctx: DirectContext, target: ServiceTarget, payload: unknown, callOptions: CallOptions = {}): Promise<DirectCallResult<T>> {
  const { net, request } = ctx;
  const payer = requireSigner(ctx);
  const started = Date.now();
  const steps: TraceStep[] = [];
  const report = (event: Omit<ProgressEvent, 'elapsedMs'>) => {
    try {
      callOptions.onProgress?.({ ...event, elapsedMs: Date.now() - started });
    } catch {
      // A failing progress callback must not break a payment in flight.
    }
  };
  let escrowId: string | undefined = callOptions.escrowId;
  async function step<R>(name: DirectCallStep, fn: () => Promise<R>, describe: (r: R) => Omit<TraceStep, 'step' | 'status' | 'startedAt' | 'ms'> = () => ({})): Promise<R> {
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
      const err = e instanceof ClientError ? e : new ClientError('ESCROW', `${name} failed: ${errorText(e)}`, escrowId ? { escrowId } : {});
      if (escrowId && err.data.escrowId === undefined) err.data.escrowId = escrowId;
      steps.push({ step: name, status: 'failed', startedAt: new Date(t0).toISOString(), ms: Date.now() - t0, error: err.message });
      report({ step: name, phase: 'failed', message: err.message, ...(escrowId ? { escrowId } : {}) });
      err.data.trace = { steps: [...steps] };
      throw err;
    }
  }

  let body: string;
  try {
    body = JSON.stringify(payload ?? null);
  } catch (e) {
    throw new ClientError('CONFIG', `payload is not JSON-serialisable: ${errorText(e)}`);
  }
  const maxCost = callOptions.maxCost !== undefined ? parseMax(callOptions.maxCost) : undefined;
  const resolved = await resolveTarget(target, ctx.registryApi);
  if (ctx.verifyEndpoint) await verifyManifest(request, resolved, callOptions.signal);
  const signal = callOptions.signal;
  const post = (headers: Record<string, string>) =>
    request(resolved.endpoint, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, ...(signal ? { signal } : {}) });

  const quote = await step(
    'quote',
    async () => {
      const answer = await post({});
      if (answer.status !== 402) {
        throw new ClientError('QUOTE', `expected a 402 quote from ${resolved.endpoint}, got HTTP ${answer.status}: ${serverMessage(answer.json, answer.text)}`, {
          status: answer.status,
          serverMessage: serverMessage(answer.json, answer.text),
        });
      }
      return pickQuote(net, answer, resolved, maxCost);
    },
    (q) => ({ detail: { amount: q.amount.toString(), payTo: q.requirement.payTo, quoteId: q.quoteId } }),
  );
  const treasury = await ctx.platformAddress();
  const quotedPlatform = quote.extra.escrow?.platformAddress;
  if (quotedPlatform !== undefined && quotedPlatform !== treasury) {
    throw new ClientError('QUOTE', `the service expects escrows for platform ${quotedPlatform}, this client uses ${treasury}: nothing was paid`, {
      ...(resolved.service ? { service: resolved.service } : {}),
    });
  }

  let quoteId = quote.quoteId;
  // What the escrow holds once funded: said with the way back in every error after that point.
  let locked = quote.amount;
  if (escrowId) {
    const existing = await ctx.escrowApi().getEscrows([escrowId]);
    const found = existing.find((e) => e.contractId === escrowId);
    if (!found) throw new ClientError('ESCROW', `escrow ${escrowId} not found`, { escrowId });
    if (found.roles.receiver !== resolved.owner) throw new ClientError('PAYTO_MISMATCH', `escrow ${escrowId} pays ${found.roles.receiver}, not ${resolved.owner}`, { escrowId });
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
        ctx.escrowApi().deployAndSend(
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
      () => ctx.escrowApi().run('fundEscrow', { contractId: deployed.contractId, signer: payer.publicKey, amount: quote.amount }, payer),
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
        throw new ClientError(e instanceof ClientError ? e.code : 'NETWORK', `${reason}; ${wayBack('may still hold')} (refused if it was served)`, { ...lockedData, reason });
      }
      if (answer.status === 200) return answer;
      const msg = serverMessage(answer.json, answer.text);
      const data = { status: answer.status, serverMessage: msg, ...lockedData };
      if (answer.status === 402 || answer.status === 409) {
        const reason = `the service refused escrow ${paidEscrow}: ${msg}`;
        throw new ClientError('PAYMENT_REFUSED', `${reason}; ${wayBack('still holds')}`, { ...data, reason });
      }
      const reason = `the service failed after escrow ${paidEscrow} was funded (HTTP ${answer.status}): ${msg}`;
      throw new ClientError('SERVICE', `${reason}; ${wayBack('still holds')}`, { ...data, reason });
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
