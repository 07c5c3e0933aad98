import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(bytes: Uint8Array): string {
  let n = BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

/** The 6-character base62 CRC-32 of a key's body (zlib's CRC-32: checked on every authenticated request). */
function checksum(body: string): string {
  let n = crc32(body);
  let out = '';
  while (n > 0) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(6, '0');
}

/** API keys: `sk_live_` + base62 of 32 random bytes (43 chars) + a 6-char base62 CRC32 checksum. */
export const API_KEY_PREFIX = 'sk_live_';
const SECRET_LEN = 43;

/** Makes a new API key. Only {@link hashToken} of it is ever stored. */
export function generateApiKey(): { key: string; prefix: string } {
  const secret = base62(randomBytes(32)).padStart(SECRET_LEN, '0');
  const key = `${API_KEY_PREFIX}${secret}${checksum(secret)}`;
  return { key, prefix: key.slice(0, API_KEY_PREFIX.length + 6) };
}

/** True when `key` has the API-key shape and a valid checksum (rejects typos without a database lookup). */
export function isWellFormedApiKey(key: string): boolean {
  if (!key.startsWith(API_KEY_PREFIX) || key.length !== API_KEY_PREFIX.length + SECRET_LEN + 6) return false;
  const body = key.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + SECRET_LEN);
  if (!/^[0-9A-Za-z]+$/.test(body)) return false;
  const sum = Buffer.from(key.slice(-6));
  const expected = Buffer.from(checksum(body));
  return timingSafeEqual(sum, expected);
}

/** SHA-256 (hex) of a bearer secret: API keys, session tokens, OAuth tokens are stored only as this. */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** A random opaque token (base64url of 32 bytes). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Constant-time string comparison. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
