import {
  createEd25519Signer,
  formatPaymentCredential,
  hexEncode,
  parsePaymentChallenges,
  parsePaymentReceipt,
  type Ed25519Signer,
  type PaymentChallenge,
  type PaymentReceipt,
} from '@farebox/protocol';
import { commitmentBytes } from '@farebox/stellar';
import { ClientError } from './errors.js';

// Paying gateway calls from an MPP channel (the `stellar` method's `channel`
// intent; docs/protocol.md, "MPP channel sessions"): no account, one voucher
// per call. The payer keeps its own count of the channel's cumulative amount
// and signs only that plus the price it agreed to: a gateway that claims the
// channel holds more than this client paid gets no signature.

/** Where a payer keeps its channel's cumulative amount between processes (default: in memory, starting at 0). */
export interface ChannelCounter {
  get(): Promise<bigint>;
  set(amount: bigint): Promise<void>;
}

export interface ChannelPayerOptions {
  /** The gateway's address, e.g. `https://farebox.example`. */
  baseUrl: string;
  /** The channel contract (`C...`) whose recipient is the gateway's treasury. */
  channel: string;
  /** The commitment key's Stellar secret seed (`S...`): what signs the vouchers. */
  commitmentSecret: string;
  /** The network's passphrase (the commitment bytes name it). */
  networkPassphrase: string;
  /** The channel's cumulative amount as this client counted it (default: in memory, from 0). */
  counter?: ChannelCounter;
  fetch?: typeof fetch;
}

/** A call paid from the channel. */
export interface ChannelCallResult<T = unknown> {
  result: T;
  callId: string;
  /** This call's price, base units. */
  price: bigint;
  /** The channel's cumulative amount after it. */
  cumulativeAmount: bigint;
  receipt: PaymentReceipt;
}

export interface ChannelCallOptions {
  /** The most this call may cost, base units (refused before anything is signed). */
  maxCost?: bigint;
}

function memoryCounter(): ChannelCounter {
  let v = 0n;
  return { get: async () => v, set: async (n) => void (v = n) };
}

/**
 * A payer of gateway calls from one channel, one call at a time (the gateway takes one call in flight per
 * channel): `call(service, payload)` asks for the channel's challenge, signs the voucher for its count plus the
 * price, and pays; a failed call counts nothing, and its amount pays the next one.
 *
 * @example
 * const payer = createChannelPayer({ baseUrl, channel: 'C...', commitmentSecret: 'S...', networkPassphrase: Networks.TESTNET });
 * const { result, cumulativeAmount } = await payer.call('word-count', { text: 'one two' });
 */
export function createChannelPayer(o: ChannelPayerOptions) {
  const doFetch = o.fetch ?? globalThis.fetch;
  const counter = o.counter ?? memoryCounter();
  const base = o.baseUrl.replace(/\/+$/, '');
  let signer: Promise<Ed25519Signer> | undefined;
  let turn: Promise<unknown> = Promise.resolve();

  async function post(body: string, headers: Record<string, string>) {
    let res: Response;
    try {
      res = await doFetch(`${base}/v1/call`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    } catch (err) {
      throw new ClientError('NETWORK', `the gateway is unreachable: ${(err as Error).message}`, {}, { cause: err });
    }
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      throw new ClientError('BAD_RESPONSE', `the gateway answered ${res.status} with no JSON`);
    }
    return { res, json };
  }

  async function once<T>(service: string, payload: Record<string, unknown>, opts: ChannelCallOptions): Promise<ChannelCallResult<T>> {
    const body = JSON.stringify({ service, payload });
    const asked = await post(body, { 'farebox-channel': o.channel });
    if (asked.res.status !== 402) throw refusal(asked.res.status, asked.json);
    const challenge = parsePaymentChallenges(asked.res.headers.get('www-authenticate') ?? undefined).find(
      (c) => c.method === 'stellar' && c.intent === 'channel',
    );
    if (!challenge) throw refusal(asked.res.status, asked.json);
    const { price, next } = await terms(challenge, opts);
    signer ??= createEd25519Signer(o.commitmentSecret);
    const signature = hexEncode(await (await signer).sign(commitmentBytes(o.channel, next, o.networkPassphrase)));
    const authorization = formatPaymentCredential({ challenge, payload: { action: 'voucher', amount: next.toString(), signature } });
    const paid = await post(body, { authorization });
    if (paid.res.status !== 200) throw refusal(paid.res.status, paid.json);
    await counter.set(next);
    return {
      result: paid.json.result as T,
      callId: String(paid.json.callId),
      price,
      cumulativeAmount: next,
      receipt: parsePaymentReceipt(paid.res.headers.get('payment-receipt') ?? ''),
    };
  }

  /** The price the challenge asks and the voucher's amount: this client's count plus the price, never the gateway's word for it. */
  async function terms(challenge: PaymentChallenge, opts: ChannelCallOptions) {
    const r = challenge.request as { amount?: unknown; channel?: unknown; methodDetails?: { cumulativeAmount?: unknown } };
    if (r.channel !== o.channel) throw new ClientError('PAYMENT_REFUSED', `the gateway asked for channel ${String(r.channel)}, not ${o.channel}`);
    if (typeof r.amount !== 'string' || !/^[1-9]\d{0,18}$/.test(r.amount)) throw new ClientError('BAD_RESPONSE', 'the challenge has no price');
    const price = BigInt(r.amount);
    if (opts.maxCost !== undefined && price > opts.maxCost)
      throw new ClientError('PRICE_LIMIT', `the call costs ${price} base units, above maxCost ${opts.maxCost}; nothing was signed or paid`);
    const counted = await counter.get();
    const theirs = BigInt(String(r.methodDetails?.cumulativeAmount ?? '0'));
    if (theirs !== counted)
      throw new ClientError(
        'PAYMENT_REFUSED',
        `the gateway counts ${theirs} on channel ${o.channel}, this client ${counted}: nothing was signed (check the counter, or the channel's history)`,
      );
    return { price, next: counted + price };
  }

  return {
    /** Pays one call from the channel; calls wait for each other (one in flight per channel). */
    call<T = unknown>(service: string, payload: Record<string, unknown> = {}, opts: ChannelCallOptions = {}): Promise<ChannelCallResult<T>> {
      const run = turn.then(() => once<T>(service, payload, opts));
      turn = run.catch(() => undefined);
      return run;
    },
    /** The channel's cumulative amount as this client counted it. */
    cumulativeAmount: () => counter.get(),
  };
}

export type ChannelPayer = ReturnType<typeof createChannelPayer>;

function refusal(status: number, json: Record<string, unknown>): ClientError {
  const message = typeof json.error === 'string' ? json.error : typeof json.detail === 'string' ? json.detail : `the gateway answered ${status}`;
  if (status === 402) return new ClientError('PAYMENT_REFUSED', message, { status, ...(typeof json.type === 'string' ? { problem: json.type } : {}) });
  if (status === 404) return new ClientError('NOT_FOUND', message, { status });
  return new ClientError(status >= 500 ? 'SERVICE' : 'GATEWAY_API', message, { status, ...(json.refunded === true ? { refunded: true } : {}) });
}
