import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createEd25519Signer, type Ed25519Signer } from '@farebox/protocol';
import { createThreadedEd25519Signer } from '@farebox/protocol/signing-thread';
import { Keypair, TransactionBuilder, type FeeBumpTransaction, type Transaction } from '@stellar/stellar-sdk';
import { WalletError } from './errors.js';
import type { TransactionSigner, WalletProvider } from './port.js';
import { FileKeystoreStorage, MemoryKeystoreStorage, type KeystoreRecord, type KeystoreStorage } from './storage.js';

export interface LocalKeystoreOptions {
  /** Directory for the encrypted records and (when no key is given) the generated key file. */
  dir?: string;
  /** Record storage; defaults to files under `dir`, else memory. */
  storage?: KeystoreStorage;
  /** 32-byte encryption key, or its base64 / hex text. Defaults to `FAREBOX_KEYSTORE_KEY`, then `dir/keystore.key`. */
  key?: Uint8Array | string;
  env?: Record<string, string | undefined>;
}

/** The local wallet provider: Stellar keys encrypted at rest with AES-256-GCM. */
export interface LocalKeystore extends WalletProvider {
  /** Stores an existing secret under `ref` (idempotent for the same secret) and returns its address. */
  import(ref: string, secret: string): Promise<string>;
  /** A transaction signer for `ref`'s wallet. */
  signer(ref: string): Promise<TransactionSigner>;
  /**
   * An Ed25519 signer for raw messages (the platform's certificate key); it
   * holds a key object, not the seed. With `thread: true` it signs on a worker
   * thread (off the event loop, on machines with more than one core) and keeps
   * the key's PKCS#8 bytes in memory to start that thread (again, if it dies);
   * `close` stops the thread.
   */
  ed25519Signer(ref: string, options?: { thread?: boolean }): Promise<Ed25519Signer & { close(): Promise<void> }>;
  /**
   * Encrypts a secret the host must use again (a webhook signing secret)
   * under a key derived from the keystore key (HKDF-SHA256, its own label, so
   * it never equals the key that seals wallets), AES-256-GCM with `context` as
   * additional data: the sealed text opens only with the same key and context.
   */
  sealSecret(context: string, secret: string): string;
  /** The secret {@link sealSecret} sealed under `context`; `DECRYPT_FAILED` with another key, context or a changed text. */
  openSecret(context: string, sealed: string): string;
}

function parseKey(key: Uint8Array | string): Buffer {
  if (typeof key !== 'string') {
    if (key.length !== 32) throw new WalletError('BAD_KEY', 'the keystore key must be 32 bytes');
    return Buffer.from(key);
  }
  const text = key.trim();
  const buf = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (buf.length !== 32) throw new WalletError('BAD_KEY', 'FAREBOX_KEYSTORE_KEY must be 32 bytes, as 64 hex characters or base64');
  return buf;
}

async function loadOrCreateKeyFile(dir: string): Promise<Buffer> {
  const path = join(dir, 'keystore.key');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  try {
    await writeFile(path, randomBytes(32).toString('base64'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  await chmod(path, 0o600);
  return parseKey(await readFile(path, 'utf8'));
}

/**
 * Creates the local keystore. The key comes from `options.key`, then
 * `FAREBOX_KEYSTORE_KEY`, then a key file `dir/keystore.key` generated with
 * mode 0600; with neither `dir` nor a key, a random in-memory key (tests).
 *
 * @example
 * const wallets = await createLocalKeystore({ dir: '.farebox/keystore' });
 * const address = await wallets.create('account:42');
 * const signedXdr = await wallets.sign(address, unsignedXdr, network.passphrase);
 */
export async function createLocalKeystore(options: LocalKeystoreOptions = {}): Promise<LocalKeystore> {
  const env = options.env ?? {};
  const key =
    options.key !== undefined
      ? parseKey(options.key)
      : env.FAREBOX_KEYSTORE_KEY
        ? parseKey(env.FAREBOX_KEYSTORE_KEY)
        : options.dir
          ? await loadOrCreateKeyFile(options.dir)
          : randomBytes(32);
  const storage = options.storage ?? (options.dir ? new FileKeystoreStorage(options.dir) : new MemoryKeystoreStorage());

  // Secrets other than wallets (sealSecret) are sealed under a key of their own, derived from the keystore key.
  const secretsKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'farebox-sealed-secret-v1', 32));
  const aad = (ref: string, address: string) => Buffer.from(`farebox-keystore-v1\n${ref}\n${address}`);

  function seal(ref: string, keypair: Keypair): KeystoreRecord {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(ref, keypair.publicKey()));
    const ciphertext = Buffer.concat([cipher.update(keypair.rawSecretKey()), cipher.final()]);
    return {
      ref,
      address: keypair.publicKey(),
      iv: iv.toString('base64'),
      ciphertext: ciphertext.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      createdAt: new Date().toISOString(),
    };
  }

  function open(record: KeystoreRecord): Keypair {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(record.iv, 'base64'));
      decipher.setAAD(aad(record.ref, record.address));
      decipher.setAuthTag(Buffer.from(record.tag, 'base64'));
      const raw = Buffer.concat([decipher.update(Buffer.from(record.ciphertext, 'base64')), decipher.final()]);
      const kp = Keypair.fromRawEd25519Seed(raw);
      raw.fill(0);
      if (kp.publicKey() !== record.address) throw new Error('address mismatch');
      return kp;
    } catch {
      throw new WalletError('DECRYPT_FAILED', `cannot decrypt the wallet ${record.address}: wrong keystore key or tampered record`);
    }
  }

  function checkRef(ref: string) {
    if (typeof ref !== 'string' || ref.length === 0 || ref.length > 200) throw new WalletError('INVALID_REF', 'a wallet ref is 1 to 200 characters');
  }

  async function recordFor(ref: string): Promise<KeystoreRecord> {
    const rec = await storage.get(ref);
    if (!rec) throw new WalletError('UNKNOWN_WALLET', `no wallet for ${ref}`);
    return rec;
  }

  async function sign(address: string, txXdr: string, networkPassphrase: string): Promise<string> {
    const rec = await storage.getByAddress(address);
    if (!rec) throw new WalletError('UNKNOWN_WALLET', `no wallet with address ${address}`);
    let tx: Transaction | FeeBumpTransaction;
    try {
      tx = TransactionBuilder.fromXDR(txXdr, networkPassphrase);
    } catch {
      throw new WalletError('BAD_TRANSACTION', 'not a transaction envelope');
    }
    tx.sign(open(rec));
    return tx.toXDR();
  }

  return {
    async create(ref) {
      checkRef(ref);
      const existing = await storage.get(ref);
      if (existing) return existing.address;
      return (await storage.putIfAbsent(seal(ref, Keypair.random()))).address;
    },
    async import(ref, secret) {
      checkRef(ref);
      let kp: Keypair;
      try {
        kp = Keypair.fromSecret(secret);
      } catch {
        throw new WalletError('BAD_KEY', 'not a valid S... secret seed');
      }
      const stored = await storage.putIfAbsent(seal(ref, kp));
      if (stored.address !== kp.publicKey()) throw new WalletError('INVALID_REF', `${ref} already holds another wallet`);
      return stored.address;
    },
    async publicKey(ref) {
      return (await storage.get(ref))?.address;
    },
    sign,
    async signer(ref) {
      const rec = await recordFor(ref);
      return { publicKey: rec.address, signTransaction: (xdr, passphrase) => sign(rec.address, xdr, passphrase) };
    },
    async ed25519Signer(ref, options = {}) {
      const kp = open(await recordFor(ref));
      if (options.thread) return createThreadedEd25519Signer(kp.secret());
      const signer = await createEd25519Signer(kp.secret());
      return { publicKey: signer.publicKey, sign: signer.sign, close: async () => undefined };
    },
    sealSecret(context, secret) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', secretsKey, iv);
      cipher.setAAD(Buffer.from(`farebox-sealed-secret-v1\n${context}`));
      const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return `v1.${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${ciphertext.toString('base64url')}`;
    },
    openSecret(context, sealed) {
      try {
        const [v, iv, tag, ciphertext] = sealed.split('.');
        if (v !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('not a sealed secret');
        const decipher = createDecipheriv('aes-256-gcm', secretsKey, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(`farebox-sealed-secret-v1\n${context}`));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new WalletError('DECRYPT_FAILED', `cannot open the sealed secret of ${context}: wrong keystore key or tampered record`);
      }
    },
  };
}
