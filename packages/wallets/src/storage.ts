import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One encrypted wallet secret at rest. */
export interface KeystoreRecord {
  ref: string;
  address: string;
  /** base64: 12-byte IV, ciphertext and 16-byte GCM tag. */
  iv: string;
  ciphertext: string;
  tag: string;
  createdAt: string;
}

/** Where encrypted records live. `putIfAbsent` must be atomic: the first writer wins. */
export interface KeystoreStorage {
  get(ref: string): Promise<KeystoreRecord | undefined>;
  getByAddress(address: string): Promise<KeystoreRecord | undefined>;
  /** Stores `record` unless `record.ref` exists; returns whichever record is stored. */
  putIfAbsent(record: KeystoreRecord): Promise<KeystoreRecord>;
}

/** In-memory storage, for tests and throwaway processes. */
export class MemoryKeystoreStorage implements KeystoreStorage {
  readonly #byRef = new Map<string, KeystoreRecord>();
  readonly #byAddress = new Map<string, KeystoreRecord>();

  async get(ref: string) {
    return this.#byRef.get(ref);
  }

  async getByAddress(address: string) {
    return this.#byAddress.get(address);
  }

  async putIfAbsent(record: KeystoreRecord) {
    const existing = this.#byRef.get(record.ref);
    if (existing) return existing;
    this.#byRef.set(record.ref, record);
    this.#byAddress.set(record.address, record);
    return record;
  }
}

const fileName = (ref: string) => `${createHash('sha256').update(ref).digest('hex')}.json`;

/**
 * One file per wallet under `dir/wallets/`, created with O_EXCL so two
 * processes creating the same ref agree on one key; an address index under
 * `dir/by-address/`. Files are written with mode 0600.
 */
export class FileKeystoreStorage implements KeystoreStorage {
  constructor(private readonly dir: string) {}

  async get(ref: string) {
    return readJson(join(this.dir, 'wallets', fileName(ref)));
  }

  async getByAddress(address: string) {
    const index = await readJson<{ ref: string }>(join(this.dir, 'by-address', `${address}.json`));
    return index ? this.get(index.ref) : undefined;
  }

  async putIfAbsent(record: KeystoreRecord) {
    await mkdir(join(this.dir, 'wallets'), { recursive: true, mode: 0o700 });
    await mkdir(join(this.dir, 'by-address'), { recursive: true, mode: 0o700 });
    try {
      await writeFile(join(this.dir, 'wallets', fileName(record.ref)), JSON.stringify(record), { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const existing = await this.get(record.ref);
      if (existing) return existing;
      throw err;
    }
    await writeFile(join(this.dir, 'by-address', `${record.address}.json`), JSON.stringify({ ref: record.ref }), { mode: 0o600 });
    return record;
  }
}

async function readJson<T = KeystoreRecord>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
