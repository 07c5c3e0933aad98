import { hexEncode, timingSafeEqualBytes, utf8 } from './encoding.js';

// Signed webhooks (docs/webhooks.md): the gateway POSTs each event to the
// account's endpoints with `Farebox-Signature: t=<unix seconds>,v1=<hex>`,
// where v1 is HMAC-SHA256, keyed with the endpoint's secret (the whole
// `whsec_...` string as UTF-8), over `<t>.<the raw body>`. Several v1
// signatures appear while a rotated secret is still valid. The same code signs
// (the gateway) and verifies (@farebox/provider and @farebox/client re-export
// it); it runs on Node (node:crypto) and edge runtimes (WebCrypto).

/** The header that carries the signature. */
export const WEBHOOK_SIGNATURE_HEADER = 'Farebox-Signature';
/** Headers that name the event, its type and the delivery (for logs and de-duplication; not signed: the body has the event's id and type). */
export const WEBHOOK_HEADERS = {
  signature: 'Farebox-Signature',
  eventId: 'Farebox-Event-Id',
  eventType: 'Farebox-Event-Type',
  deliveryId: 'Farebox-Delivery-Id',
} as const;
/** How far a signature's timestamp may be from the receiver's clock, seconds (replay window): 5 minutes. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/** The events an endpoint may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  'topup.completed',
  'settlement.released',
  'settlement.failed',
  'dispute.opened',
  'dispute.resolved',
  'service.health_changed',
  'budget.threshold_reached',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** A delivered event: the body of every webhook request. `id` is the same on every retry and redelivery. */
export interface WebhookEvent<D = Record<string, unknown>> {
  id: string;
  /** One of {@link WEBHOOK_EVENT_TYPES}, or `webhook.ping` (a test the owner sent). */
  type: string;
  created_at: string;
  data: D;
}

export type WebhookRejection = 'missing_signature' | 'malformed_signature' | 'timestamp_outside_tolerance' | 'signature_mismatch' | 'invalid_payload';

export type WebhookVerdict<D = Record<string, unknown>> =
  | { ok: true; event: WebhookEvent<D>; timestamp: number }
  | { ok: false; reason: WebhookRejection; message: string };

export interface VerifyWebhookOptions {
  /** The request body exactly as received (bytes or text): not parsed and serialised again. */
  payload: string | Uint8Array;
  /** The `Farebox-Signature` header's value. */
  signature: string | null | undefined;
  /** The endpoint's secret (`whsec_...`), or several while you switch from one to another. */
  secret: string | readonly string[];
  /** Replay window, seconds (default {@link WEBHOOK_TOLERANCE_SECONDS}). */
  toleranceSeconds?: number;
  /** The receiver's clock, epoch milliseconds (default `Date.now`). */
  now?: () => number;
}

type NodeCrypto = typeof import('node:crypto');
const nodeCrypto: NodeCrypto | undefined = (() => {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    return proc?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
  } catch {
    return undefined;
  }
})();

function signedBytes(timestamp: number, payload: string | Uint8Array): Uint8Array {
  const head = utf8.encode(`${timestamp}.`);
  const body = typeof payload === 'string' ? utf8.encode(payload) : payload;
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

async function hmacHex(secret: string, message: Uint8Array): Promise<string> {
  if (nodeCrypto) return nodeCrypto.createHmac('sha256', secret).update(message).digest('hex');
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error('no WebCrypto available in this runtime');
  const key = await subtle.importKey('raw', utf8.encode(secret) as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return hexEncode(new Uint8Array(await subtle.sign('HMAC', key, message as BufferSource)));
}

/**
 * The `Farebox-Signature` value for `payload` sent at `timestamp` (unix
 * seconds): `t=<timestamp>,v1=<hex>`, one `v1` per secret.
 *
 * @example
 * const header = await signWebhookPayload('whsec_...', body, Math.floor(Date.now() / 1000));
 */
export async function signWebhookPayload(secret: string | readonly string[], payload: string | Uint8Array, timestamp: number): Promise<string> {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new TypeError('timestamp must be unix seconds');
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0 || secrets.some((s) => typeof s !== 'string' || s === '')) throw new TypeError('a webhook secret is a non-empty string');
  const message = signedBytes(timestamp, payload);
  const sigs = await Promise.all(secrets.map((s) => hmacHex(s, message)));
  return [`t=${timestamp}`, ...sigs.map((s) => `v1=${s}`)].join(',');
}

const reject = (reason: WebhookRejection, message: string): WebhookVerdict<never> => ({ ok: false, reason, message });

/**
 * Checks a webhook request: the header's timestamp within the replay window
 * (5 minutes either way by default), one of its `v1` signatures made with one
 * of `secret` over the raw body (compared in constant time), and the body a
 * Farebox event. Answers the event, or why it was refused (answer the request
 * with 400 then; the gateway retries).
 *
 * @example
 * const verdict = await verifyWebhook({ payload: rawBody, signature: req.headers['farebox-signature'], secret: process.env.FAREBOX_WEBHOOK_SECRET });
 * if (!verdict.ok) return res.status(400).send(verdict.message);
 * if (verdict.event.type === 'settlement.released') ...
 */
export async function verifyWebhook<D = Record<string, unknown>>(options: VerifyWebhookOptions): Promise<WebhookVerdict<D>> {
  const header = options.signature;
  if (typeof header !== 'string' || header.trim() === '') return reject('missing_signature', `no ${WEBHOOK_SIGNATURE_HEADER} header`);
  let timestamp: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === 't' && /^\d{1,12}$/.test(v)) timestamp = Number(v);
    else if (k === 'v1' && /^[0-9a-f]{64}$/.test(v)) candidates.push(v);
  }
  if (timestamp === undefined || candidates.length === 0)
    return reject('malformed_signature', `${WEBHOOK_SIGNATURE_HEADER} must look like t=<unix seconds>,v1=<64 hex characters>`);
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  const nowS = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(nowS - timestamp) > tolerance)
    return reject(
      'timestamp_outside_tolerance',
      `the signature's timestamp is ${nowS - timestamp} s from now (more than ${tolerance} s): a replay, or a clock off`,
    );
  const secrets = typeof options.secret === 'string' ? [options.secret] : options.secret;
  const message = signedBytes(timestamp, options.payload);
  let match = false;
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret === '') continue;
    const expected = utf8.encode(await hmacHex(secret, message));
    // Every candidate is compared (no early exit on the secret's account).
    for (const c of candidates) if (timingSafeEqualBytes(expected, utf8.encode(c))) match = true;
  }
  if (!match) return reject('signature_mismatch', 'no signature matches the secret: a wrong secret, or a body changed on the way (verify the raw body)');
  let event: unknown;
  try {
    event = JSON.parse(typeof options.payload === 'string' ? options.payload : utf8.decode(options.payload));
  } catch {
    return reject('invalid_payload', 'the body is not JSON');
  }
  const e = event as Partial<WebhookEvent>;
  if (!e || typeof e !== 'object' || typeof e.id !== 'string' || typeof e.type !== 'string' || typeof e.data !== 'object' || e.data === null)
    return reject('invalid_payload', 'the body is not a Farebox event ({ id, type, created_at, data })');
  return { ok: true, event: event as WebhookEvent<D>, timestamp };
}
