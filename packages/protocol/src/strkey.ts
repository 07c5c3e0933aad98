import { FareboxError } from './errors.js';

// Stellar StrKey (SEP-23) for the two kinds the protocol needs: ed25519
// public keys (G...) and secret seeds (S...). Kept here so the protocol
// package stays dependency-free for edge runtimes.
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const VERSION = { publicKey: 6 << 3, secretSeed: 18 << 3, contract: 2 << 3 } as const;
export type StrKeyKind = keyof typeof VERSION;

function crc16xmodem(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function base32Encode(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function base32Decode(text: string): Uint8Array | null {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text) {
    const idx = ALPHABET.indexOf(ch);
    if (idx < 0) return null;
    value = (value << 5) | idx;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Uint8Array.from(out);
}

/** Encodes 32 raw bytes as a StrKey of the given kind. */
export function encodeStrKey(kind: StrKeyKind, raw: Uint8Array): string {
  if (raw.length !== 32) throw new FareboxError('INVALID_KEY', 'a StrKey payload is 32 bytes');
  const payload = new Uint8Array(33);
  payload[0] = VERSION[kind];
  payload.set(raw, 1);
  const crc = crc16xmodem(payload);
  const full = new Uint8Array(35);
  full.set(payload);
  full[33] = crc & 0xff;
  full[34] = crc >> 8;
  return base32Encode(full);
}

/** Decodes a StrKey of the given kind into its 32 raw bytes, or throws `INVALID_KEY`. */
export function decodeStrKey(kind: StrKeyKind, text: string): Uint8Array {
  const bytes = typeof text === 'string' && text.length === 56 ? base32Decode(text) : null;
  if (bytes?.length !== 35 || bytes[0] !== VERSION[kind]) {
    throw new FareboxError(
      'INVALID_KEY',
      `not a valid ${kind === 'publicKey' ? 'G... public key' : kind === 'secretSeed' ? 'S... secret seed' : 'C... contract id'}`,
    );
  }
  const crc = crc16xmodem(bytes.subarray(0, 33));
  if (bytes[33] !== (crc & 0xff) || bytes[34] !== crc >> 8) {
    throw new FareboxError('INVALID_KEY', 'StrKey checksum mismatch');
  }
  return bytes.slice(1, 33);
}

/** True when `text` is a well-formed StrKey of the given kind. */
export function isValidStrKey(kind: StrKeyKind, text: unknown): text is string {
  if (typeof text !== 'string') return false;
  try {
    decodeStrKey(kind, text);
    return true;
  } catch {
    return false;
  }
}
