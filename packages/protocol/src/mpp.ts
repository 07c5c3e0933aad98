import { base64Decode, base64UrlEncode, timingSafeEqualBytes, utf8 } from './encoding.js';
import { FareboxError } from './errors.js';

// The `Payment` HTTP authentication scheme of the Machine Payments Protocol
// (MPP, draft-httpauth-payment-00 in tempoxyz/mpp-specs), as `mppx` 0.11 puts
// it on the wire: a 402 with one `WWW-Authenticate: Payment ...` per offer,
// a retry with `Authorization: Payment <base64url JSON>`, and a
// `Payment-Receipt` on the 2xx answer. Failures are problem+json documents
// under https://paymentauth.org/problems/. The challenge id is the draft's
// HMAC-SHA256 binding over seven `|`-joined slots, so a server needs no
// state to know a challenge is its own (replays are the method's business).

type NodeCrypto = typeof import('node:crypto');
const nodeCrypto: NodeCrypto | undefined = (() => {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    return proc?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
  } catch {
    return undefined;
  }
})();

/** The authentication scheme's name. */
export const PAYMENT_SCHEME = 'Payment';
/** The header of a paid answer's receipt. */
export const PAYMENT_RECEIPT_HEADER = 'Payment-Receipt';
/** Where MPP's problem types live: `${MPP_PROBLEM_BASE}verification-failed`. */
export const MPP_PROBLEM_BASE = 'https://paymentauth.org/problems/';
/** The CAIP-2 ids of the Stellar networks, as the `stellar` method names them. */
export const MPP_STELLAR_NETWORKS = { testnet: 'stellar:testnet', mainnet: 'stellar:pubnet' } as const;

/** The problem codes a Farebox server answers with (the draft's, `invalid-payload` of mppx, `settlement-failed` of the Stellar method). */
export type MppProblemCode =
  | 'payment-required'
  | 'payment-insufficient'
  | 'payment-expired'
  | 'verification-failed'
  | 'method-unsupported'
  | 'malformed-credential'
  | 'invalid-challenge'
  | 'invalid-payload'
  | 'settlement-failed';

const PROBLEMS: Record<MppProblemCode, { title: string; status: number }> = {
  'payment-required': { title: 'Payment Required', status: 402 },
  'payment-insufficient': { title: 'Payment Insufficient', status: 402 },
  'payment-expired': { title: 'Payment Expired', status: 402 },
  'verification-failed': { title: 'Payment Verification Failed', status: 402 },
  'method-unsupported': { title: 'Method Unsupported', status: 400 },
  'malformed-credential': { title: 'Malformed Credential', status: 402 },
  'invalid-challenge': { title: 'Invalid Challenge', status: 402 },
  'invalid-payload': { title: 'Invalid Payload', status: 402 },
  'settlement-failed': { title: 'Settlement Failed', status: 402 },
};

/** An MPP problem document (RFC 9457): what a refused payment answers, with the fresh challenge's id when one is offered. */
export interface MppProblem {
  type: string;
  title: string;
  status: number;
  detail: string;
  challengeId?: string;
  [extra: string]: unknown;
}

/** The problem document for `code`. */
export function mppProblem(code: MppProblemCode, detail: string, extra: Record<string, unknown> = {}): MppProblem {
  const p = PROBLEMS[code];
  return { type: `${MPP_PROBLEM_BASE}${code}`, title: p.title, status: p.status, detail, ...extra };
}

/** A refusal of a credential, with its problem code (a server answers its problem document and a fresh challenge). */
export class MppError extends FareboxError<MppProblemCode, undefined> {
  override readonly name: string = 'MppError';
  constructor(code: MppProblemCode, message: string) {
    super(code, message);
  }
  get status(): number {
    return PROBLEMS[this.code].status;
  }
  problem(extra: Record<string, unknown> = {}): MppProblem {
    return mppProblem(this.code, this.message, extra);
  }
}

/** JSON in RFC 8785 (JCS) form: object keys sorted by UTF-16 code units, no space, numbers and strings as ECMAScript writes them. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('canonical JSON has no NaN or Infinity');
    if (typeof value === 'bigint') throw new TypeError('canonical JSON has no bigint: write amounts as strings');
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`canonical JSON cannot hold ${typeof value}`);
    return text;
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/** The `request` parameter of a challenge: base64url (no padding) of the request's canonical JSON. */
export function encodePaymentRequest(request: Record<string, unknown>): string {
  return base64UrlEncode(utf8.encode(canonicalJson(request)));
}

/** A challenge's `request`, decoded; throws a `malformed-credential` {@link MppError} when it is no base64url JSON object. */
export function decodePaymentRequest(text: string): Record<string, unknown> {
  const bytes = typeof text === 'string' && text.length <= 16_384 && /^[A-Za-z0-9_-]*$/.test(text) ? base64Decode(text) : null;
  let value: unknown;
  try {
    value = bytes ? JSON.parse(utf8.decode(bytes)) : undefined;
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new MppError('malformed-credential', 'the challenge request is not base64url JSON');
  return value as Record<string, unknown>;
}

/** A challenge as the server issues it and the client echoes it (`request` decoded here; on the wire it is {@link encodePaymentRequest}'s text). */
export interface PaymentChallenge {
  id: string;
  realm: string;
  method: string;
  intent: string;
  request: Record<string, unknown>;
  /** RFC 3339; a Farebox challenge always has one (mppx refuses credentials without it). */
  expires?: string;
  description?: string;
  digest?: string;
  /** base64url of canonical JSON, echoed unchanged. */
  opaque?: string;
}

/** The fields a challenge's id binds. */
export type ChallengeFields = Omit<PaymentChallenge, 'id' | 'description'>;

async function hmacBase64Url(secret: string, message: string): Promise<string> {
  if (nodeCrypto) return nodeCrypto.createHmac('sha256', secret).update(message, 'utf8').digest('base64url');
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error('no WebCrypto available in this runtime');
  const key = await subtle.importKey('raw', utf8.encode(secret) as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return base64UrlEncode(new Uint8Array(await subtle.sign('HMAC', key, utf8.encode(message) as BufferSource)));
}

/**
 * The challenge id the draft recommends: base64url(HMAC-SHA256(secret,
 * realm|method|intent|request|expires|digest|opaque)), absent slots empty.
 * `secret` is the server's (at least 32 bytes, as mppx asks).
 */
export function challengeId(secret: string, fields: ChallengeFields): Promise<string> {
  if (typeof secret !== 'string' || utf8.encode(secret).length < 32) throw new TypeError('an MPP challenge secret has at least 32 bytes');
  const slots = [
    fields.realm,
    fields.method,
    fields.intent,
    encodePaymentRequest(fields.request),
    fields.expires ?? '',
    fields.digest ?? '',
    fields.opaque ?? '',
  ];
  return hmacBase64Url(secret, slots.join('|'));
}

/** A new challenge whose id binds its fields. */
export async function createPaymentChallenge(secret: string, fields: ChallengeFields & { description?: string }): Promise<PaymentChallenge> {
  return { id: await challengeId(secret, fields), ...fields };
}

/** Whether `challenge` (an echo) carries the id this server's `secret` gives its fields: constant-time. */
export async function isOwnChallenge(secret: string, challenge: PaymentChallenge): Promise<boolean> {
  const expected = await challengeId(secret, challenge);
  return timingSafeEqualBytes(utf8.encode(expected), utf8.encode(String(challenge.id)));
}

function quoted(value: string): string {
  if (/[\r\n]/.test(value)) throw new TypeError('an auth-param holds no CR or LF');
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`).replace(/[\u0100-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

/** The `WWW-Authenticate` value of one challenge, its parameters in mppx's order. */
export function formatPaymentChallenge(challenge: PaymentChallenge): string {
  const params: Array<[string, string | undefined]> = [
    ['id', challenge.id],
    ['realm', challenge.realm],
    ['method', challenge.method],
    ['intent', challenge.intent],
    ['request', encodePaymentRequest(challenge.request)],
    ['description', challenge.description],
    ['digest', challenge.digest],
    ['expires', challenge.expires],
    ['opaque', challenge.opaque],
  ];
  return `${PAYMENT_SCHEME} ${params
    .filter((p): p is [string, string] => p[1] !== undefined)
    .map(([k, v]) => `${k}=${quoted(v)}`)
    .join(', ')}`;
}

/** Every `Payment` challenge in `WWW-Authenticate` values (several headers, or several challenges in one); other schemes are skipped. */
export function parsePaymentChallenges(header: string | readonly string[] | undefined): PaymentChallenge[] {
  const values = header === undefined ? [] : typeof header === 'string' ? [header] : header;
  const out: PaymentChallenge[] = [];
  for (const value of values) {
    for (const { scheme, params } of authChallenges(value)) {
      if (scheme.toLowerCase() !== 'payment') continue;
      const { id, realm, method, intent, request, expires, description, digest, opaque } = params;
      if (!id || realm === undefined || !method || !intent || request === undefined) continue;
      let decoded: Record<string, unknown>;
      try {
        decoded = decodePaymentRequest(request);
      } catch {
        continue;
      }
      out.push({
        id,
        realm,
        method,
        intent,
        request: decoded,
        ...(expires !== undefined ? { expires } : {}),
        ...(description !== undefined ? { description } : {}),
        ...(digest !== undefined ? { digest } : {}),
        ...(opaque !== undefined ? { opaque } : {}),
      });
    }
  }
  return out;
}

/** RFC 9110 challenges in one header value: `scheme k=v, k="v", other-scheme ...`. */
function authChallenges(value: string): Array<{ scheme: string; params: Record<string, string> }> {
  const out: Array<{ scheme: string; params: Record<string, string> }> = [];
  let i = 0;
  const n = value.length;
  const skip = () => {
    while (i < n && (value[i] === ' ' || value[i] === '\t' || value[i] === ',')) i++;
  };
  const token = () => {
    const start = i;
    while (i < n && /[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(value[i]!)) i++;
    return value.slice(start, i);
  };
  let current: { scheme: string; params: Record<string, string> } | undefined;
  while (i < n) {
    skip();
    const start = i;
    const name = token();
    if (!name) {
      i++;
      continue;
    }
    let j = i;
    while (j < n && (value[j] === ' ' || value[j] === '\t')) j++;
    if (value[j] === '=' && current) {
      i = j + 1;
      while (i < n && (value[i] === ' ' || value[i] === '\t')) i++;
      let v = '';
      if (value[i] === '"') {
        i++;
        while (i < n && value[i] !== '"') {
          if (value[i] === '\\' && i + 1 < n) {
            if (value[i + 1] === 'u' && /^[0-9a-fA-F]{4}$/.test(value.slice(i + 2, i + 6))) {
              v += String.fromCharCode(Number.parseInt(value.slice(i + 2, i + 6), 16));
              i += 6;
              continue;
            }
            i++;
          }
          v += value[i];
          i++;
        }
        i++;
      } else {
        const vs = i;
        while (i < n && value[i] !== ',') i++;
        v = value.slice(vs, i).trim();
      }
      const key = name.toLowerCase();
      if (!(key in current.params)) current.params[key] = v;
    } else {
      // A new scheme (a token not followed by `=`); token68 forms are not used by `Payment` challenges.
      current = { scheme: value.slice(start, i), params: {} };
      out.push(current);
    }
  }
  return out;
}

/** The credential a client sends: the challenge echoed (its `request` as sent on the wire), who pays, and the method's proof. */
export interface PaymentCredential {
  challenge: PaymentChallenge;
  /** The payer, as a DID (`did:pkh:stellar:testnet:G...`). */
  source?: string;
  payload: unknown;
}

/** `Payment <base64url JSON>`, the `Authorization` value of a credential. */
export function formatPaymentCredential(credential: PaymentCredential): string {
  const { request, ...rest } = credential.challenge;
  const wire = {
    challenge: { ...rest, request: encodePaymentRequest(request) },
    ...(credential.source !== undefined ? { source: credential.source } : {}),
    payload: credential.payload,
  };
  return `${PAYMENT_SCHEME} ${base64UrlEncode(utf8.encode(JSON.stringify(wire)))}`;
}

const MAX_CREDENTIAL_CHARS = 32_768;

/**
 * The credential of an `Authorization: Payment ...` value; throws a
 * `malformed-credential` {@link MppError} for anything else (bad base64url or
 * JSON, a challenge echo missing a field, a field of the wrong type).
 */
export function parsePaymentCredential(authorization: string): PaymentCredential {
  const m = /^Payment\s+([A-Za-z0-9_-]+={0,2})\s*$/i.exec(authorization ?? '');
  if (!m || m[1]!.length > MAX_CREDENTIAL_CHARS) throw new MppError('malformed-credential', 'the credential is not `Payment <base64url JSON>`');
  const bytes = base64Decode(m[1]!.replace(/=+$/, ''));
  let value: unknown;
  try {
    value = bytes ? JSON.parse(utf8.decode(bytes)) : undefined;
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new MppError('malformed-credential', 'the credential is not base64url JSON');
  const c = value as { challenge?: unknown; source?: unknown; payload?: unknown };
  const ch = c.challenge as Record<string, unknown> | undefined;
  if (!ch || typeof ch !== 'object' || Array.isArray(ch)) throw new MppError('malformed-credential', 'the credential has no challenge');
  for (const k of ['id', 'realm', 'method', 'intent', 'request'] as const)
    if (typeof ch[k] !== 'string') throw new MppError('malformed-credential', `the credential's challenge has no ${k}`);
  for (const k of ['expires', 'description', 'digest', 'opaque'] as const)
    if (ch[k] !== undefined && typeof ch[k] !== 'string') throw new MppError('malformed-credential', `the credential's challenge ${k} is not a string`);
  if (c.source !== undefined && typeof c.source !== 'string') throw new MppError('malformed-credential', 'the credential source is not a string');
  if (c.payload === undefined) throw new MppError('malformed-credential', 'the credential has no payload');
  const challenge: PaymentChallenge = {
    id: ch.id as string,
    realm: ch.realm as string,
    method: ch.method as string,
    intent: ch.intent as string,
    request: decodePaymentRequest(ch.request as string),
  };
  for (const k of ['expires', 'description', 'digest', 'opaque'] as const) if (typeof ch[k] === 'string') challenge[k] = ch[k] as string;
  return { challenge, ...(typeof c.source === 'string' ? { source: c.source } : {}), payload: c.payload };
}

/** What a paid answer's `Payment-Receipt` says. */
export interface PaymentReceipt {
  status: 'success';
  method: string;
  /** RFC 3339. */
  timestamp: string;
  /** The method's reference: a transaction hash, or the challenge's reference for an off-chain voucher. */
  reference: string;
  externalId?: string;
  challengeId?: string;
  [extra: string]: unknown;
}

/** The `Payment-Receipt` value: base64url (no padding) of the receipt's JSON. */
export function formatPaymentReceipt(receipt: PaymentReceipt): string {
  return base64UrlEncode(utf8.encode(JSON.stringify(receipt)));
}

/** A `Payment-Receipt` value, read; throws a TypeError when it is not one. */
export function parsePaymentReceipt(value: string): PaymentReceipt {
  const bytes = /^[A-Za-z0-9_-]+$/.test(value ?? '') ? base64Decode(value) : null;
  let r: unknown;
  try {
    r = bytes ? JSON.parse(utf8.decode(bytes)) : undefined;
  } catch {
    r = undefined;
  }
  const o = r as Partial<PaymentReceipt> | undefined;
  if (o?.status !== 'success' || typeof o.method !== 'string' || typeof o.reference !== 'string' || typeof o.timestamp !== 'string')
    throw new TypeError('not a Payment-Receipt');
  return o as PaymentReceipt;
}

/** The `stellar` method's `channel` intent: what a challenge asks for (amounts in base units, as decimal strings). */
export interface StellarChannelRequest {
  /** This call's price: the increment over `methodDetails.cumulativeAmount`. */
  amount: string;
  /** The channel contract (`C...`). */
  channel: string;
  description?: string;
  externalId?: string;
  methodDetails: { reference: string; network: string; cumulativeAmount: string };
}

/** A voucher: the new cumulative amount and the commitment key's Ed25519 signature over the contract's commitment bytes (hex). */
export interface StellarVoucher {
  action: 'voucher' | 'close';
  amount: bigint;
  signature: Uint8Array;
}

/** A `channel` credential's payload, checked; throws an `invalid-payload` {@link MppError}. */
export function parseStellarVoucher(payload: unknown): StellarVoucher {
  const p = payload as { action?: unknown; amount?: unknown; signature?: unknown } | null;
  if (!p || typeof p !== 'object' || Array.isArray(p)) throw new MppError('invalid-payload', 'the voucher is not an object');
  if (p.action !== 'voucher' && p.action !== 'close') throw new MppError('invalid-payload', 'the voucher action is voucher or close');
  if (typeof p.amount !== 'string' || !/^(0|[1-9][0-9]{0,18})$/.test(p.amount))
    throw new MppError('invalid-payload', 'the voucher amount is a whole number of base units, as a string');
  const amount = BigInt(p.amount);
  if (amount > 9_223_372_036_854_775_807n) throw new MppError('invalid-payload', 'the voucher amount is too large');
  if (typeof p.signature !== 'string' || !/^[0-9a-f]{128}$/.test(p.signature))
    throw new MppError('invalid-payload', 'the voucher signature is 64 bytes in lower-case hex');
  const signature = new Uint8Array(64);
  for (let i = 0; i < 64; i++) signature[i] = Number.parseInt(p.signature.slice(i * 2, i * 2 + 2), 16);
  return { action: p.action, amount, signature };
}

/** The `did:pkh` of a Stellar account on a network (`did:pkh:stellar:testnet:G...`). */
export function stellarDid(network: string, account: string): string {
  return `did:pkh:${network}:${account}`;
}
