import {
  base64UrlEncode,
  costObject,
  formatPaymentChallenge,
  formatPaymentReceipt,
  MppError,
  parsePaymentCredential,
  PAYMENT_RECEIPT_HEADER,
  randomBytes,
  type PaymentCredential,
} from '@farebox/protocol';
import { UpstreamError } from '../call-upstream.js';
import type { CallableService } from '../call-types.js';
import { CALL_MODES, validateCallBody } from '../calls.js';
import { GatewayError } from '../errors.js';
import type { ChannelSessions } from './sessions.js';

/** The header an unpaid request names its channel in, to be offered a `stellar`/`channel` challenge (docs/api.md). */
export const CHANNEL_HEADER = 'farebox-channel';

/** A channel call's answer: its status, JSON text and the headers MPP adds (`WWW-Authenticate`, `Payment-Receipt`, `Cache-Control`). */
export interface ChannelCallAnswer {
  status: number;
  json: string;
  headers: Record<string, string>;
}

export interface ChannelCallsOptions {
  sessions: ChannelSessions;
  calls: {
    resolveService(name: string): Promise<CallableService | undefined>;
    deliver(
      svc: CallableService,
      payload: Record<string, unknown>,
      amount: bigint,
      callId: string,
      requestId?: string,
    ): Promise<{ text: string; json: unknown }>;
  };
}

/**
 * `POST /v1/call` paid from an MPP channel, with no account: without a
 * credential (the channel named in `Farebox-Channel`) a 402 with the
 * channel's challenge; with `Authorization: Payment` the voucher is checked
 * and stored, the service called under a certificate, and the voucher posted
 * (200 with `Payment-Receipt`) or voided (500, nothing counted). A refused
 * credential answers 402 with the problem and a fresh challenge.
 */
export function createChannelCalls({ sessions, calls }: ChannelCallsOptions) {
  async function offer(svc: CallableService, channel: string | undefined, error: MppError, knownOnly = true): Promise<ChannelCallAnswer> {
    const headers: Record<string, string> = { 'cache-control': 'no-store', 'content-type': 'application/problem+json' };
    let challengeId: string | undefined;
    if (channel) {
      try {
        const ch = await sessions.challenge(channel, svc.service, svc.pricePerCall, `${svc.service}: one call`, { knownOnly });
        headers['www-authenticate'] = formatPaymentChallenge(ch);
        challengeId = ch.id;
      } catch (err) {
        if (!(err instanceof MppError)) throw err;
        // Asked for a challenge, the channel itself is refused (not ours, not USDC, not found): that is the answer. After
        // a refused credential the refusal stands, without a fresh challenge for a channel the ledger does not know.
        if (!knownOnly) error = err;
      }
    }
    const problem = error.problem(challengeId ? { challengeId } : {});
    return { status: error.status, headers, json: JSON.stringify({ ...problem, error: error.message, code: codeOf(error) }) };
  }

  return {
    async call(body: unknown, opts: { authorization?: string; channel?: string; requestId?: string }): Promise<ChannelCallAnswer> {
      const { service, payload } = validateCallBody(body);
      const svc = await calls.resolveService(service);
      if (!svc) throw new GatewayError('NOT_FOUND', 'service not found');
      if (!opts.authorization) {
        if (!opts.channel) throw new GatewayError('UNAUTHENTICATED', 'authentication required', undefined, { 'WWW-Authenticate': 'Bearer' });
        return offer(
          svc,
          opts.channel,
          new MppError('payment-required', `${service} costs ${svc.pricePerCall} base units a call: pay it with a voucher on your channel`),
          false,
        );
      }
      let credential: PaymentCredential;
      try {
        credential = parsePaymentCredential(opts.authorization);
      } catch (err) {
        if (err instanceof MppError) return offer(svc, opts.channel, err);
        throw err;
      }
      const channel = typeof credential.challenge.request.channel === 'string' ? credential.challenge.request.channel : opts.channel;
      const callId = `call_${base64UrlEncode(randomBytes(12))}`;
      let voucher: Awaited<ReturnType<ChannelSessions['accept']>>;
      try {
        voucher = await sessions.accept(credential, svc, svc.pricePerCall, callId);
      } catch (err) {
        if (err instanceof MppError) return offer(svc, channel, err);
        throw err;
      }
      let result: { text: string; json: unknown };
      try {
        // The certificate names this call's price (what the service is paid), not the channel's running total.
        result = await calls.deliver(svc, payload, voucher.price, callId, opts.requestId);
      } catch (err) {
        await sessions.void(voucher);
        if (!(err instanceof UpstreamError || err instanceof GatewayError)) throw err;
        const cumulative = voucher.amount - voucher.price;
        const failure = {
          error: `${err.message}; nothing was charged: the voucher was not counted (the channel's cumulative stays ${cumulative}, pay the next call with ${voucher.amount} again)`,
          code: 'UPSTREAM',
          callId,
          refunded: true,
        };
        return { status: 500, headers: {}, json: JSON.stringify(failure) };
      }
      let receipt: Awaited<ReturnType<ChannelSessions['post']>>;
      try {
        receipt = await sessions.post(voucher);
      } catch (err) {
        if (!(err instanceof MppError)) throw err;
        // The voucher's lease ended before the service answered (another call took the channel): nothing is counted.
        const failure = { error: `${err.message}; nothing was charged: the voucher was not counted`, code: 'UPSTREAM', callId, refunded: true };
        return { status: 500, headers: {}, json: JSON.stringify(failure) };
      }
      const rest = {
        cost: costObject(voucher.price),
        paidWith: 'channel',
        mode: CALL_MODES.platformSigned,
        channel: { id: voucher.channel, cumulativeAmount: voucher.amount.toString() },
        callId,
      };
      return {
        status: 200,
        headers: { [PAYMENT_RECEIPT_HEADER.toLowerCase()]: formatPaymentReceipt(receipt), 'cache-control': 'private' },
        json: `{"result":${result.text},${JSON.stringify(rest).slice(1)}`,
      };
    },
  };
}

/** The `code` of one answer shape (`{error, code}`, docs/errors.md) for an MPP problem. */
function codeOf(err: MppError): string {
  return err.code === 'payment-required' ? 'PAYMENT_REQUIRED' : err.code === 'method-unsupported' ? 'BAD_REQUEST' : 'PAYMENT_REFUSED';
}

export type ChannelCalls = ReturnType<typeof createChannelCalls>;
