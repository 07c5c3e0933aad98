/** A classic account with (at most) the one USDC trustline the devnet knows. */
export interface AccountState {
  id: string;
  balance: bigint;
  seq: bigint;
  numSubEntries: number;
  lastModified: number;
  usdc?: { balance: bigint; limit: bigint; flags: number; lastModified: number };
}

export const cloneAccount = (a: AccountState): AccountState => ({ ...a, ...(a.usdc ? { usdc: { ...a.usdc } } : {}) });

/** A contract data entry; key and value are base64 ScVal. */
export interface DataEntry {
  contractId: string;
  key: string;
  val: string;
  lastModified: number;
}

/**
 * Copy-on-write view over a map: reads fall through to the base, writes stay
 * here until `commit()`; dropping the overlay rolls back.
 */
export class Overlay<V> {
  readonly writes = new Map<string, V | null>();
  constructor(
    private readonly base: Map<string, V>,
    private readonly clone: (v: V) => V,
  ) {}
  get(k: string): V | undefined {
    const w = this.writes.get(k);
    if (w !== undefined) return w ?? undefined;
    return this.base.get(k);
  }
  getMut(k: string): V | undefined {
    const w = this.writes.get(k);
    if (w !== undefined) return w ?? undefined;
    const b = this.base.get(k);
    if (!b) return undefined;
    const c = this.clone(b);
    this.writes.set(k, c);
    return c;
  }
  set(k: string, v: V): void {
    this.writes.set(k, v);
  }
  delete(k: string): void {
    this.writes.set(k, null);
  }
  commit(): void {
    for (const [k, v] of this.writes) {
      if (v === null) this.base.delete(k);
      else this.base.set(k, v);
    }
    this.writes.clear();
  }
}
