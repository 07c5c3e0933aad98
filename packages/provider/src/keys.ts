import { createPrivateKey, createPublicKey } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { decodeStrKey, encodeStrKey, randomBytes } from '@farebox/protocol';
import { ProviderError } from './errors.js';

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The `G...` public key of a Stellar secret seed (`S...`). Throws on an invalid seed. */
export function publicKeyFromSecret(secret: string): string {
  const seed = decodeStrKey('secretSeed', secret.trim());
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  return encodeStrKey('publicKey', new Uint8Array(spki.subarray(spki.length - 32)));
}

/**
 * Reads a keypair file: either the bare secret seed (`S...`) or JSON with a
 * `secret` (or `secretKey`) field. Returns the secret seed.
 */
export function readKeypairFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (e) {
    throw new ProviderError('KEYPAIR', `cannot read keypair file ${path}: ${(e as Error).message}`, { path });
  }
  if (!text.startsWith('{')) return text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ProviderError('KEYPAIR', `keypair file ${path} is neither a secret seed nor JSON`, { path });
  }
  const record = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  const secret = record.secret ?? record.secretKey;
  if (typeof secret !== 'string') throw new ProviderError('KEYPAIR', `keypair file ${path} has no "secret" field`, { path });
  return secret;
}

/**
 * Loads the keypair file at `path`, creating it (mode 0600, a fresh key from
 * the CSPRNG) when it does not exist. For local demos and first runs; a
 * funded testnet or mainnet key is the publisher's to provide.
 *
 * @example
 * const { publicKey, created } = ensureKeypairFile('.farebox/keypair');
 */
export function ensureKeypairFile(path: string): { publicKey: string; created: boolean } {
  if (existsSync(path)) return { publicKey: publicKeyFromSecret(readKeypairFile(path)), created: false };
  const secret = encodeStrKey('secretSeed', randomBytes(32));
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(path, 0o600);
  } catch (e) {
    throw new ProviderError('KEYPAIR', `cannot create keypair file ${path}: ${(e as Error).message}`, { path });
  }
  return { publicKey: publicKeyFromSecret(secret), created: true };
}
