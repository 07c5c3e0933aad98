import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '@farebox/protocol/files';
import { z } from 'zod';
import { ProviderError } from './errors.js';

/**
 * Where an escrow stands with this provider:
 * `serving` (claimed, the handler runs or ran and the process died),
 * `served` (the handler succeeded, the release is pending or failed),
 * `released` (paid out), `abandoned` (the handler failed: never released,
 * the funds stay for the dispute path).
 * An `exact` payment is `serving` once verified, `released` once settled
 * (`releaseTx`), `abandoned` when it was never settled (the handler failed,
 * or the settlement did: `reason`); in every status it is refused as a replay.
 */
export type ServedEscrowStatus = 'serving' | 'served' | 'released' | 'abandoned';

/** One escrow this provider claimed. Amounts are base units as decimal strings (JSON-safe). */
export interface ServedEscrowRecord {
  escrowId: string;
  service: string;
  quoteId: string;
  /** The price served, base units. */
  amount: string;
  payer: string;
  status: ServedEscrowStatus;
  /** Unix milliseconds. */
  claimedAt: number;
  updatedAt: number;
  releaseTx?: string;
  /** Why the escrow was abandoned, or why its release failed. */
  reason?: string;
}

/** The fields a status change may set. */
export type ServedEscrowUpdate = Pick<ServedEscrowRecord, 'status'> & Partial<Pick<ServedEscrowRecord, 'releaseTx' | 'reason' | 'payer'>>;

/**
 * The durable record of escrows a provider has claimed, so that each escrow
 * is served at most once, also across restarts. `claim` must be atomic (two
 * concurrent claims of one escrow: one `true`) and durable before it
 * resolves: the handler runs only after the record is on disk.
 */
export interface ServedEscrowStore {
  /** Records `record` unless the escrow was recorded before (in any status). `true` when this call recorded it. */
  claim(record: ServedEscrowRecord): Promise<boolean>;
  /** Changes the status of a recorded escrow. Throws when it was never claimed. */
  update(escrowId: string, change: ServedEscrowUpdate): Promise<ServedEscrowRecord>;
  get(escrowId: string): Promise<ServedEscrowRecord | undefined>;
  list(): Promise<ServedEscrowRecord[]>;
}

function applyUpdate(record: ServedEscrowRecord, change: ServedEscrowUpdate, now: number): ServedEscrowRecord {
  return {
    ...record,
    status: change.status,
    updatedAt: now,
    ...(change.releaseTx !== undefined ? { releaseTx: change.releaseTx } : {}),
    ...(change.reason !== undefined ? { reason: change.reason } : {}),
    ...(change.payer !== undefined ? { payer: change.payer } : {}),
  };
}

function notClaimed(escrowId: string): ProviderError {
  return new ProviderError('ESCROW_STORE', `escrow ${escrowId} was never claimed by this provider`, { escrowId });
}

/**
 * A {@link ServedEscrowStore} in memory: for tests and throwaway demos only.
 * A restart forgets every escrow, so a funded escrow could be served again:
 * use {@link FileServedEscrowStore} (the default) for anything real.
 */
export class MemoryServedEscrowStore implements ServedEscrowStore {
  readonly #records = new Map<string, ServedEscrowRecord>();
  readonly #now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  async claim(record: ServedEscrowRecord): Promise<boolean> {
    if (this.#records.has(record.escrowId)) return false;
    this.#records.set(record.escrowId, { ...record });
    return true;
  }

  async update(escrowId: string, change: ServedEscrowUpdate): Promise<ServedEscrowRecord> {
    const record = this.#records.get(escrowId);
    if (!record) throw notClaimed(escrowId);
    const next = applyUpdate(record, change, this.#now());
    this.#records.set(escrowId, next);
    return { ...next };
  }

  async get(escrowId: string): Promise<ServedEscrowRecord | undefined> {
    const record = this.#records.get(escrowId);
    return record ? { ...record } : undefined;
  }

  async list(): Promise<ServedEscrowRecord[]> {
    return [...this.#records.values()].map((r) => ({ ...r }));
  }
}

const RecordSchema = z.object({
  escrowId: z.string(),
  service: z.string(),
  quoteId: z.string(),
  amount: z.string().regex(/^\d+$/),
  payer: z.string(),
  status: z.enum(['serving', 'served', 'released', 'abandoned']),
  claimedAt: z.number(),
  updatedAt: z.number(),
  releaseTx: z.string().optional(),
  reason: z.string().optional(),
});

const FileSchema = z.object({ version: z.literal(1), escrows: z.record(z.string(), RecordSchema) });

/**
 * The default {@link ServedEscrowStore}: one JSON file, rewritten atomically
 * on every change (write a temporary file, fsync it, rename it over the old
 * one, fsync the directory). Claims are serialised inside the process, so one
 * file belongs to one provider process; replicas need one file each (and
 * then each escrow reaches one replica) or a shared database-backed store.
 * A file that cannot be read is an error, never an empty store: forgetting
 * served escrows would serve them again.
 *
 * @example
 * const store = new FileServedEscrowStore('.farebox/served-escrows.json');
 */
export class FileServedEscrowStore implements ServedEscrowStore {
  readonly path: string;
  readonly #now: () => number;
  #records: Map<string, ServedEscrowRecord> | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(path: string, options: { now?: () => number } = {}) {
    if (typeof path !== 'string' || path.trim() === '') throw new ProviderError('ESCROW_STORE', 'FileServedEscrowStore needs a file path');
    this.path = path;
    this.#now = options.now ?? Date.now;
  }

  /** Runs `fn` after every earlier operation of this store (one at a time). */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #load(): Promise<Map<string, ServedEscrowRecord>> {
    if (this.#records) return this.#records;
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new ProviderError('ESCROW_STORE', `cannot read the served-escrow file ${this.path}: ${(e as Error).message}`, { path: this.path });
      }
      this.#records = new Map();
      return this.#records;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = FileSchema.safeParse(json);
    if (!parsed.success) {
      throw new ProviderError(
        'ESCROW_STORE',
        `the served-escrow file ${this.path} is corrupt; refusing to serve escrows until it is repaired (starting empty could serve an escrow twice)`,
        { path: this.path },
      );
    }
    this.#records = new Map(Object.entries(parsed.data.escrows));
    return this.#records;
  }

  async #persist(records: Map<string, ServedEscrowRecord>): Promise<void> {
    // Durable (file and directory flushed) and atomic: a crash leaves the old record or the new one.
    await writeFileAtomic(this.path, JSON.stringify({ version: 1, escrows: Object.fromEntries(records) }), { dirMode: 0o777 });
  }

  /** Applies `change` to a copy, writes it, and only then makes it the live state. */
  async #write(mutate: (next: Map<string, ServedEscrowRecord>) => void): Promise<void> {
    const current = await this.#load();
    const next = new Map(current);
    mutate(next);
    try {
      await this.#persist(next);
    } catch (e) {
      throw new ProviderError('ESCROW_STORE', `cannot write the served-escrow file ${this.path}: ${(e as Error).message}`, { path: this.path });
    }
    this.#records = next;
  }

  claim(record: ServedEscrowRecord): Promise<boolean> {
    return this.#serial(async () => {
      const records = await this.#load();
      if (records.has(record.escrowId)) return false;
      await this.#write((next) => next.set(record.escrowId, { ...record }));
      return true;
    });
  }

  update(escrowId: string, change: ServedEscrowUpdate): Promise<ServedEscrowRecord> {
    return this.#serial(async () => {
      const records = await this.#load();
      const record = records.get(escrowId);
      if (!record) throw notClaimed(escrowId);
      const updated = applyUpdate(record, change, this.#now());
      await this.#write((next) => next.set(escrowId, updated));
      return { ...updated };
    });
  }

  get(escrowId: string): Promise<ServedEscrowRecord | undefined> {
    return this.#serial(async () => {
      const record = (await this.#load()).get(escrowId);
      return record ? { ...record } : undefined;
    });
  }

  list(): Promise<ServedEscrowRecord[]> {
    return this.#serial(async () => [...(await this.#load()).values()].map((r) => ({ ...r })));
  }
}
