import { decodeStrKey, encodeStrKey } from './strkey.js';

// Ed25519 and SHA-256 for Node and edge runtimes. On Node, node:crypto is
// used synchronously (about 0.05 ms per verify, KeyObjects cached per key);
// elsewhere WebCrypto. tweetnacl is not used: measured ~70x slower.

type NodeCrypto = typeof import('node:crypto');

const nodeCrypto: NodeCrypto | undefined = (() => {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    return proc?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
  } catch {
    return undefined;
  }
})();

const PKCS8_ED25519_PREFIX = Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]);

/** PKCS#8 DER of an Ed25519 key from its 32-byte seed (also the signing thread's key; not exported from the package). */
export function pkcs8FromSeed(seed: Uint8Array): Uint8Array {
  const der = new Uint8Array(PKCS8_ED25519_PREFIX.length + 32);
  der.set(PKCS8_ED25519_PREFIX);
  der.set(seed, PKCS8_ED25519_PREFIX.length);
  return der;
}

function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new Error('no WebCrypto available in this runtime');
  return s;
}

/** A signing key made from a Stellar secret seed (S...). The seed never leaves this object. */
export interface Ed25519Signer {
  /** The matching public key as a Stellar `G...` string. */
  readonly publicKey: string;
  sign(message: Uint8Array): Promise<Uint8Array>;
}

/** Creates a signer from a Stellar secret seed (`S...`). */
export async function createEd25519Signer(secretSeed: string): Promise<Ed25519Signer> {
  const seed = decodeStrKey('secretSeed', secretSeed);
  const der = pkcs8FromSeed(seed);
  if (nodeCrypto) {
    const key = nodeCrypto.createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' });
    const spki = nodeCrypto.createPublicKey(key).export({ format: 'der', type: 'spki' });
    const publicKey = encodeStrKey('publicKey', new Uint8Array(spki.subarray(spki.length - 32)));
    return {
      publicKey,
      sign: async (message) => new Uint8Array(nodeCrypto.sign(null, message, key)),
    };
  }
  const key = await subtle().importKey('pkcs8', der as BufferSource, { name: 'Ed25519' }, true, ['sign']);
  const jwk = await subtle().exportKey('jwk', key);
  const { base64Decode } = await import('./encoding.js');
  const raw = base64Decode(jwk.x ?? '');
  if (!raw) throw new Error('could not derive the public key');
  return {
    publicKey: encodeStrKey('publicKey', raw),
    sign: async (message) => new Uint8Array(await subtle().sign({ name: 'Ed25519' }, key, message as BufferSource)),
  };
}

// Public keys are parsed once and kept: verification is on every paid request.
const verifyKeys = new Map<string, unknown>();

/** Verifies an Ed25519 signature made by a Stellar `G...` key. Never throws on bad input. */
export async function verifyEd25519(publicKey: string, message: Uint8Array, signature: Uint8Array): Promise<boolean> {
  if (signature.length !== 64) return false;
  let key = verifyKeys.get(publicKey);
  if (!key) {
    let raw: Uint8Array;
    try {
      raw = decodeStrKey('publicKey', publicKey);
    } catch {
      return false;
    }
    if (nodeCrypto) {
      key = nodeCrypto.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' });
    } else {
      key = await subtle().importKey('raw', raw as BufferSource, { name: 'Ed25519' }, false, ['verify']);
    }
    if (verifyKeys.size > 1024) verifyKeys.clear();
    verifyKeys.set(publicKey, key);
  }
  try {
    if (nodeCrypto) return nodeCrypto.verify(null, message, key as import('node:crypto').KeyObject, signature);
    return await subtle().verify({ name: 'Ed25519' }, key as CryptoKey, signature as BufferSource, message as BufferSource);
  } catch {
    return false;
  }
}

/** SHA-256 of the given bytes. */
export async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return sha256Sync(bytes) ?? new Uint8Array(await subtle().digest('SHA-256', bytes as BufferSource));
}

/** SHA-256 of the given bytes where the runtime hashes synchronously (Node); undefined elsewhere (use {@link sha256}). */
export function sha256Sync(bytes: Uint8Array): Uint8Array | undefined {
  // crypto.hash: one call, no Hash object (about half the time for a call's body).
  if (nodeCrypto) return new Uint8Array(nodeCrypto.hash('sha256', bytes, 'buffer') as unknown as Buffer);
  return undefined;
}

const RANDOM_POOL_BYTES = 4096;
let randomPool = new Uint8Array(0);
let randomOffset = 0;

/**
 * `n` bytes from the runtime's CSPRNG. Small requests (ids, nonces: one or
 * more per paid call) are cut from a 4 KiB block drawn at once, as Node's
 * `randomUUID` does; each byte is handed out once.
 */
export function randomBytes(n: number): Uint8Array {
  if (n > 256) {
    const out = new Uint8Array(n);
    globalThis.crypto.getRandomValues(out);
    return out;
  }
  if (randomOffset + n > randomPool.length) {
    randomPool = new Uint8Array(RANDOM_POOL_BYTES);
    globalThis.crypto.getRandomValues(randomPool);
    randomOffset = 0;
  }
  const out = randomPool.slice(randomOffset, randomOffset + n);
  randomOffset += n;
  return out;
}
