import { createEd25519Signer, randomBytes, sha256, sha256Sync, verifyEd25519, type Ed25519Signer } from './crypto.js';
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

/**
 * The response header by which a service says which certificate versions it
 * verifies (`v1, v2`). A gateway sends v2 (batch-signed) certificates only
 * to a service whose answers carry `v2` in it; every other service gets v1.
 */
export const CERTIFICATE_VERSIONS_HEADER = 'farebox-certificate-versions';
/** The versions this package verifies, as a service announces them in {@link CERTIFICATE_VERSIONS_HEADER}. */
export const CERTIFICATE_VERSIONS = 'v1, v2';
/** Most certificates under one v2 signature (a proof of at most 8 steps). */
export const CERTIFICATE_BATCH_MAX = 256;
/** Longest v2 proof a verifier accepts, steps (batches of up to 65,536). */
export const CERTIFICATE_MAX_PROOF_STEPS = 16;

/** A decoded call certificate. */
export interface CallCertificate {
  /** 1: signed alone; 2: signed in a batch, under one signature over a Merkle root. */
  version: 1 | 2;
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
export type CertificateRejection = 'malformed' | 'wrong_issuer' | 'bad_signature' | 'wrong_service' | 'body_mismatch' | 'not_yet_valid' | 'expired';

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

interface Made {
  certificate: CallCertificate;
  segment: string;
}

/**
 * The claims of one certificate and the segment that carries them; at once
 * where the runtime hashes synchronously (Node), else a promise.
 */
function makeClaims(input: SignCallCertificateInput, issuer: string, version: 1 | 2): Made | Promise<Made> {
  const issuedAt = input.now ?? Math.floor(Date.now() / 1000);
  const ttl = input.ttlSeconds ?? CERTIFICATE_TTL_SECONDS;
  if (ttl <= 0 || ttl > CERTIFICATE_MAX_LIFETIME_SECONDS)
    throw new FareboxError('INVALID_CERTIFICATE', `ttlSeconds must be in 1..${CERTIFICATE_MAX_LIFETIME_SECONDS}`);
  if (input.amount < 0n) throw new FareboxError('INVALID_CERTIFICATE', 'amount must not be negative');
  const nonce = input.nonce ?? base64UrlEncode(randomBytes(CERTIFICATE_NONCE_BYTES));
  const body = toBytes(input.body);
  const made = (digest: Uint8Array): Made => {
    const certificate: CallCertificate = {
      version,
      issuer,
      service: input.service,
      bodySha256: base64UrlEncode(digest),
      amount: input.amount,
      callId: input.callId,
      issuedAt,
      expiresAt: issuedAt + ttl,
      nonce,
    };
    const claims = {
      v: version,
      iss: certificate.issuer,
      svc: certificate.service,
      bh: certificate.bodySha256,
      amt: certificate.amount.toString(),
      cid: certificate.callId,
      iat: certificate.issuedAt,
      exp: certificate.expiresAt,
      nonce: certificate.nonce,
    };
    return { certificate, segment: base64UrlEncode(utf8.encode(JSON.stringify(claims))) };
  };
  const digest = sha256Sync(body);
  return digest ? made(digest) : sha256(body).then(made);
}

/**
 * Signs a call certificate with the platform key (version 1: one signature per certificate).
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
  const { certificate, segment } = await makeClaims(input, signer.publicKey, 1);
  const signingInput = `v1.${segment}`;
  const signature = await signer.sign(utf8.encode(signingInput));
  return { header: `${signingInput}.${base64UrlEncode(signature)}`, certificate };
}

/** A v2 leaf: SHA-256 of 0x00 and the ASCII bytes `v2.<claims>`. */
function leafHash(segment: string): Uint8Array | Promise<Uint8Array> {
  const bytes = utf8.encode(`\u0000v2.${segment}`);
  return sha256Sync(bytes) ?? sha256(bytes);
}

/** A v2 inner node: SHA-256 of 0x01, the left child and the right child. */
function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array | Promise<Uint8Array> {
  const bytes = new Uint8Array(65);
  bytes[0] = 1;
  bytes.set(left, 1);
  bytes.set(right, 33);
  return sha256Sync(bytes) ?? sha256(bytes);
}

/** The bytes a v2 signature covers: the ASCII text `v2.root.<base64url(root)>`. */
function rootMessage(root: Uint8Array): Uint8Array {
  return utf8.encode(`v2.root.${base64UrlEncode(root)}`);
}

/**
 * Signs up to {@link CERTIFICATE_BATCH_MAX} call certificates with one
 * signature (version 2). Each certificate carries its own claims and the
 * path from its leaf to the Merkle root the platform signed, so a service
 * verifies it alone, exactly as a v1 certificate, with a few more hashes.
 *
 * Wire format (one header, ASCII):
 * `farebox-certificate: v2.<base64url(JSON claims)>.<base64url(proof)>.<base64url(ed25519 signature)>`
 * - leaf = SHA-256(0x00 ‖ ASCII `v2.<claims>`); inner node = SHA-256(0x01 ‖ left ‖ right);
 *   an odd node at the end of a level goes up unchanged;
 * - proof = one 33-byte step per level, leaf upwards: 0x00 when the sibling
 *   is on the left, 0x01 when on the right, then the sibling's 32 bytes
 *   (empty for a batch of one);
 * - the signature covers the ASCII bytes `v2.root.<base64url(root)>`.
 *
 * The answers are in the order of `inputs`.
 */
export async function signCallCertificateBatch(inputs: readonly SignCallCertificateInput[], signer: Ed25519Signer): Promise<SignedCallCertificate[]> {
  if (inputs.length === 0) return [];
  if (inputs.length > CERTIFICATE_BATCH_MAX) throw new FareboxError('INVALID_CERTIFICATE', `at most ${CERTIFICATE_BATCH_MAX} certificates under one signature`);
  const n = inputs.length;
  const made: Made[] = [];
  for (const input of inputs) {
    const m = makeClaims(input, signer.publicKey, 2);
    made.push(m instanceof Promise ? await m : m);
  }
  let level: Uint8Array[] = [];
  for (const m of made) {
    const h = leafHash(m.segment);
    level.push(h instanceof Promise ? await h : h);
  }
  // Leaf i's proof: steps[i], `used[i]` steps of 33 bytes so far; where[i]: its node's index on the current level.
  const depth = 32 - Math.clz32(n - 1);
  const steps = made.map(() => new Uint8Array(depth * 33));
  const used = new Array<number>(n).fill(0);
  const where = made.map((_, i) => i);
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) {
      const h = nodeHash(level[i]!, level[i + 1]!);
      next.push(h instanceof Promise ? await h : h);
    }
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    for (let leaf = 0; leaf < n; leaf++) {
      const at = where[leaf]!;
      const sibling = at ^ 1;
      if (sibling < level.length) {
        const o = used[leaf]!++ * 33;
        steps[leaf]![o] = sibling < at ? 0 : 1;
        steps[leaf]!.set(level[sibling]!, o + 1);
      }
      where[leaf] = at >> 1;
    }
    level = next;
  }
  const signature = base64UrlEncode(await signer.sign(rootMessage(level[0]!)));
  return made.map((m, i) => ({
    header: `v2.${m.segment}.${base64UrlEncode(steps[i]!.subarray(0, used[i]! * 33))}.${signature}`,
    certificate: m.certificate,
  }));
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

function decodeClaims(segment: string, version: 1 | 2): CallCertificate | null {
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
  if (c.v !== version) return null;
  if (typeof c.iss !== 'string' || !isValidStrKey('publicKey', c.iss)) return null;
  if (typeof c.svc !== 'string' || c.svc.length === 0 || c.svc.length > 32) return null;
  if (typeof c.bh !== 'string' || !B64URL.test(c.bh) || base64Decode(c.bh)?.length !== 32) return null;
  if (typeof c.amt !== 'string' || !/^(0|[1-9]\d{0,18})$/.test(c.amt)) return null;
  if (typeof c.cid !== 'string' || c.cid.length === 0 || c.cid.length > 128) return null;
  if (!Number.isSafeInteger(c.iat) || !Number.isSafeInteger(c.exp)) return null;
  if (typeof c.nonce !== 'string' || !B64URL.test(c.nonce) || (base64Decode(c.nonce)?.length ?? 0) < CERTIFICATE_NONCE_BYTES || c.nonce.length > 128)
    return null;
  const issuedAt = c.iat as number;
  const expiresAt = c.exp as number;
  if (expiresAt <= issuedAt || expiresAt - issuedAt > CERTIFICATE_MAX_LIFETIME_SECONDS) return null;
  return {
    version,
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
  const version = parts[0] === 'v1' && parts.length === 3 ? 1 : parts[0] === 'v2' && parts.length === 4 ? 2 : 0;
  if (version === 0) return reject('malformed');
  const claimsPart = parts[1]!;
  const sigPart = parts[parts.length - 1]!;
  const certificate = decodeClaims(claimsPart, version);
  if (!certificate) return reject('malformed');
  if (!B64URL.test(sigPart)) return reject('malformed');
  const signature = base64Decode(sigPart);
  if (signature?.length !== 64) return reject('malformed');
  let signed: Uint8Array;
  if (version === 1) {
    signed = utf8.encode(`v1.${claimsPart}`);
  } else {
    const proofPart = parts[2]!;
    const proof = proofPart === '' ? new Uint8Array(0) : B64URL.test(proofPart) ? base64Decode(proofPart) : null;
    if (!proof || proof.length % 33 !== 0 || proof.length / 33 > CERTIFICATE_MAX_PROOF_STEPS) return reject('malformed');
    let node = await leafHash(claimsPart);
    for (let o = 0; o < proof.length; o += 33) {
      const side = proof[o];
      if (side !== 0 && side !== 1) return reject('malformed');
      const sibling = proof.subarray(o + 1, o + 33);
      node = await (side === 0 ? nodeHash(sibling, node) : nodeHash(node, sibling));
    }
    signed = rootMessage(node);
  }
  if (certificate.issuer !== options.platformPublicKey) return reject('wrong_issuer');
  if (!(await verifyEd25519(options.platformPublicKey, signed, signature))) return reject('bad_signature');
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
