import { createEd25519Signer, randomBytes, sha256, verifyEd25519, type Ed25519Signer } from './crypto.js';
import { base64Decode, base64UrlEncode, timingSafeEqualBytes, toBytes, utf8 } from './encoding.js';
import { FareboxError } from './errors.js';
import { isValidStrKey } from './strkey.js';

/** The HTTP header that carries the call certificate on a platform-signed call. */
export const CERTIFICATE_HEADER = 'farebox-certificate';
/** Default lifetime of a certificate, seconds. */
export const CERTIFICATE_TTL_SECONDS = 60;
/** Longest lifetime a verifier accepts, seconds: longer-lived certificates are refused. */
export const CERTIFICATE_MAX_LIFETIME_SECONDS = 300;
/** Clock drift tolerated between gateway and service, seconds (the spec's "about two minutes"). */
export const CLOCK_TOLERANCE_SECONDS = 120;
/** Minimum nonce size: 128 bits. */
export const CERTIFICATE_NONCE_BYTES = 16;

/** A decoded call certificate. */
export interface CallCertificate {
  version: 1;
  /** The platform's public key, `G...`. */
  issuer: string;
  /** Registry name of the service being called. */
  service: string;
  /** base64url SHA-256 of the exact request body bytes. */
  bodySha256: string;
  /** Amount the caller was debited for this call, base units. */
  amount: bigint;
  /** The gateway's id of this call. */
  callId: string;
  /** Unix seconds. */
  issuedAt: number;
  /** Unix seconds. */
  expiresAt: number;
  /** base64url, at least 128 bits from a CSPRNG. */
  nonce: string;
}

/** Why a certificate was refused. */
export type CertificateRejection =
  | 'malformed'
  | 'wrong_issuer'
  | 'bad_signature'
  | 'wrong_service'
  | 'body_mismatch'
  | 'not_yet_valid'
  | 'expired';

export type CertificateVerdict =
  | {
      ok: true;
      certificate: CallCertificate;
      /** Unix seconds until which this certificate could still be accepted: keep its nonce at least that long. */
      acceptableUntil: number;
    }
  | { ok: false; reason: CertificateRejection; message: string };

const MESSAGES: Record<CertificateRejection, string> = {
  malformed: 'malformed certificate',
  wrong_issuer: 'certificate not issued by the platform',
  bad_signature: 'invalid certificate signature',
  wrong_service: 'certificate made for another service',
  body_mismatch: 'certificate does not match the request body',
  not_yet_valid: 'certificate issued in the future (check the host clock)',
  expired: 'certificate expired',
};

export interface SignCallCertificateInput {
  service: string;
  /** The exact body bytes that will be sent (a string is taken as UTF-8). */
  body: Uint8Array | string;
  /** Amount debited, base units. */
  amount: bigint;
  callId: string;
  /** Unix seconds; defaults to now. */
  now?: number;
  ttlSeconds?: number;
  /** For test vectors only: a fixed nonce (base64url, >= 16 bytes). */
  nonce?: string;
}

export interface SignedCallCertificate {
  /** Value for the {@link CERTIFICATE_HEADER} header. */
  header: string;
  certificate: CallCertificate;
}

/**
 * Signs a call certificate with the platform key.
 *
 * Wire format (one header, ASCII):
 * `farebox-certificate: v1.<base64url(JSON claims)>.<base64url(ed25519 signature)>`
 * The signature covers the exact ASCII bytes `v1.<base64url(JSON claims)>` as
 * transmitted, so a verifier never re-serialises anything.
 *
 * @example
 * const signer = await createCertificateSigner(process.env.PLATFORM_SECRET!);
 * const { header } = await signCallCertificate({ service: 'echo', body, amount: 10_000n, callId: 'c_1' }, signer);
 * await fetch(endpoint, { method: 'POST', body, headers: { [CERTIFICATE_HEADER]: header } });
 */
export async function signCallCertificate(input: SignCallCertificateInput, signer: Ed25519Signer): Promise<SignedCallCertificate> {
  const issuedAt = input.now ?? Math.floor(Date.now() / 1000);
  const ttl = input.ttlSeconds ?? CERTIFICATE_TTL_SECONDS;
  if (ttl <= 0 || ttl > CERTIFICATE_MAX_LIFETIME_SECONDS) throw new FareboxError('INVALID_CERTIFICATE', `ttlSeconds must be in 1..${CERTIFICATE_MAX_LIFETIME_SECONDS}`);
  if (input.amount < 0n) throw new FareboxError('INVALID_CERTIFICATE', 'amount must not be negative');
  const nonce = input.nonce ?? base64UrlEncode(randomBytes(CERTIFICATE_NONCE_BYTES));
  const certificate: CallCertificate = {
    version: 1,
    issuer: signer.publicKey,
    service: input.service,
    bodySha256: base64UrlEncode(await sha256(toBytes(input.body))),
    amount: input.amount,
    callId: input.callId,
    issuedAt,
    expiresAt: issuedAt + ttl,
    nonce,
  };
  const claims = {
    v: 1,
    iss: certificate.issuer,
    svc: certificate.service,
    bh: certificate.bodySha256,
    amt: certificate.amount.toString(),
    cid: certificate.callId,
    iat: certificate.issuedAt,
    exp: certificate.expiresAt,
    nonce: certificate.nonce,
  };
  const signingInput = `v1.${base64UrlEncode(utf8.encode(JSON.stringify(claims)))}`;
  const signature = await signer.sign(utf8.encode(signingInput));
  return { header: `${signingInput}.${base64UrlEncode(signature)}`, certificate };
}

/** Creates the platform's certificate signer from its Stellar secret seed (`S...`). */
export function createCertificateSigner(secretSeed: string): Promise<Ed25519Signer> {
  return createEd25519Signer(secretSeed);
}

export interface VerifyCallCertificateOptions {
  /** The request body bytes exactly as received. */
  body: Uint8Array | string;
  /** This service's registry name. */
  service: string;
  /** The platform public key (`G...`) the service trusts. */
  platformPublicKey: string;
  /** Unix seconds; defaults to now. */
  now?: number;
  clockToleranceSeconds?: number;
}

function reject(reason: CertificateRejection): CertificateVerdict {
  return { ok: false, reason, message: MESSAGES[reason] };
}

const B64URL = /^[A-Za-z0-9_-]+$/;

function decodeClaims(segment: string): CallCertificate | null {
  if (!B64URL.test(segment)) return null;
  const bytes = base64Decode(segment);
  if (!bytes) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(utf8.decode(bytes));
  } catch {
    return null;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return null;
  const c = raw as Record<string, unknown>;
  if (c.v !== 1) return null;
  if (typeof c.iss !== 'string' || !isValidStrKey('publicKey', c.iss)) return null;
  if (typeof c.svc !== 'string' || c.svc.length === 0 || c.svc.length > 32) return null;
  if (typeof c.bh !== 'string' || !B64URL.test(c.bh) || base64Decode(c.bh)?.length !== 32) return null;
  if (typeof c.amt !== 'string' || !/^(0|[1-9]\d{0,18})$/.test(c.amt)) return null;
  if (typeof c.cid !== 'string' || c.cid.length === 0 || c.cid.length > 128) return null;
  if (!Number.isSafeInteger(c.iat) || !Number.isSafeInteger(c.exp)) return null;
  if (typeof c.nonce !== 'string' || !B64URL.test(c.nonce) || (base64Decode(c.nonce)?.length ?? 0) < CERTIFICATE_NONCE_BYTES || c.nonce.length > 128) return null;
  const issuedAt = c.iat as number;
  const expiresAt = c.exp as number;
  if (expiresAt <= issuedAt || expiresAt - issuedAt > CERTIFICATE_MAX_LIFETIME_SECONDS) return null;
  return {
    version: 1,
    issuer: c.iss,
    service: c.svc,
    bodySha256: c.bh,
    amount: BigInt(c.amt),
    callId: c.cid,
    issuedAt,
    expiresAt,
    nonce: c.nonce,
  };
}

/**
 * Verifies a call certificate against the received body. Pure: replay
 * protection is the caller's (the provider keeps each nonce until
 * `acceptableUntil`), and so is the amount check against the price.
 *
 * Checks, in order: well-formed; issued by `platformPublicKey`; signature;
 * made for `service`; SHA-256 of `body`; issued-at no later than now + tolerance;
 * expiry no earlier than now - tolerance.
 */
export async function verifyCallCertificate(header: string | undefined | null, options: VerifyCallCertificateOptions): Promise<CertificateVerdict> {
  if (typeof header !== 'string' || header.length > 4096) return reject('malformed');
  const parts = header.trim().split('.');
  if (parts.length !== 3 || parts[0] !== 'v1') return reject('malformed');
  const [, claimsPart, sigPart] = parts as [string, string, string];
  const certificate = decodeClaims(claimsPart);
  if (!certificate) return reject('malformed');
  if (!B64URL.test(sigPart)) return reject('malformed');
  const signature = base64Decode(sigPart);
  if (!signature || signature.length !== 64) return reject('malformed');
  if (certificate.issuer !== options.platformPublicKey) return reject('wrong_issuer');
  const signed = await verifyEd25519(options.platformPublicKey, utf8.encode(`v1.${claimsPart}`), signature);
  if (!signed) return reject('bad_signature');
  if (certificate.service !== options.service) return reject('wrong_service');
  const bodyHash = await sha256(toBytes(options.body));
  const claimed = base64Decode(certificate.bodySha256)!;
  if (!timingSafeEqualBytes(bodyHash, claimed)) return reject('body_mismatch');
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.clockToleranceSeconds ?? CLOCK_TOLERANCE_SECONDS;
  if (certificate.issuedAt > now + tolerance) return reject('not_yet_valid');
  if (certificate.expiresAt < now - tolerance) return reject('expired');
  return { ok: true, certificate, acceptableUntil: certificate.expiresAt + tolerance };
}
