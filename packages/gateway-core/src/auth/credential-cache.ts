import type { Principal } from './accounts.js';
import { systemClock } from '../clock.js';

/** What changed: a revoked API key, or a user whose attributes changed. */
export type Invalidation = { keyId: string } | { userId: string };

/** Carries invalidations between gateway instances (Redis pub/sub), or nowhere for one instance. */
export interface InvalidationBus {
  publish(message: Invalidation): void;
  /** `onMessage` for every message from other instances; `onGap` when messages may have been lost (reconnect). */
  subscribe(onMessage: (message: Invalidation) => void, onGap: () => void): void;
  /** True while messages are known to arrive; the cache serves nothing otherwise. */
  readonly live: boolean;
  close(): void;
}

export interface CredentialCacheOptions {
  /** How long an entry serves without a database read (default 5 s): the bound for anything a lost message misses. */
  ttlMs?: number;
  /** Entries kept at most (default 10,000; the oldest go first). */
  maxEntries?: number;
  bus?: InvalidationBus;
  now?: () => number;
}

interface Entry {
  principal: Principal;
  keyId: string;
  lastUsedAt: number;
  until: number;
}

/**
 * API-key principals kept in memory for a few seconds, so a call does not
 * read the key and its user from the database every time. A revocation or a
 * change to the user (publisher activation) drops the entries at once here
 * and, through the bus, on every other instance; if the bus loses its
 * connection the cache is emptied and stays off until it is back.
 */
export class CredentialCache {
  readonly #entries = new Map<string, Entry>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #bus: InvalidationBus | undefined;
  readonly #now: () => number;
  #generation = 0;

  constructor(options: CredentialCacheOptions = {}) {
    this.#ttlMs = options.ttlMs ?? 5_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#bus = options.bus;
    this.#now = options.now ?? systemClock;
    this.#bus?.subscribe(
      (m) => this.#drop(m),
      () => {
        this.#generation++;
        this.#entries.clear();
      },
    );
  }

  get enabled(): boolean {
    return this.#ttlMs > 0 && (this.#bus === undefined || this.#bus.live);
  }

  /** The cached principal for a key hash, and whether its `last_used_at` is due for a refresh (then marked done). */
  get(keyHash: string): { principal: Principal; touch: boolean } | undefined {
    if (!this.enabled) return undefined;
    const entry = this.#entries.get(keyHash);
    if (!entry) return undefined;
    const now = this.#now();
    if (entry.until <= now) {
      this.#entries.delete(keyHash);
      return undefined;
    }
    const touch = now - entry.lastUsedAt > 60_000;
    if (touch) entry.lastUsedAt = now;
    return { principal: entry.principal, touch };
  }

  /** Taken before the database read whose result goes to {@link set}. */
  generation(): number {
    return this.#generation;
  }

  /** Keeps a principal read from the database, unless something was invalidated since `generation` (the read may predate it). */
  set(keyHash: string, principal: Principal, keyId: string, lastUsedAt: number, generation: number): void {
    if (!this.enabled || generation !== this.#generation) return;
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(keyHash, { principal, keyId, lastUsedAt, until: this.#now() + this.#ttlMs });
  }

  /** Drops what `change` affects here and tells the other instances. */
  invalidate(change: Invalidation): void {
    this.#drop(change);
    this.#bus?.publish(change);
  }

  #drop(change: Invalidation): void {
    this.#generation++;
    for (const [hash, entry] of this.#entries) {
      if ('keyId' in change ? entry.keyId === change.keyId : entry.principal.user.id === change.userId) this.#entries.delete(hash);
    }
  }

  close(): void {
    this.#entries.clear();
    this.#bus?.close();
  }
}
