import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FlatVectorIndex } from './vectors.js';

/** The part of usearch's `Index` the approximate index uses. */
export interface HnswGraph {
  add(keys: bigint | BigUint64Array, vectors: Float32Array | Float32Array[], threads?: number): void;
  search(vector: Float32Array, k: number, threads: number): { keys: BigUint64Array; distances: Float32Array };
  remove(keys: bigint): number | number[];
  size(): number;
  /** Writes the graph to a file (usearch's own format); absent on an older binding. */
  save?(path: string): void;
  /** Replaces the graph with one written by `save`. */
  load?(path: string): void;
}

/** The part of the `usearch` module the approximate index uses. */
export interface HnswModule {
  Index: new (config: { metric: 'cos'; connectivity: number; dimensions: number; quantization: 'i8' }) => HnswGraph;
}

/** Loads the HNSW implementation; the default imports the optional `usearch` package. */
export type HnswLoader = () => Promise<HnswModule>;

// A variable specifier keeps bundlers and the type checker from requiring the optional package.
const USEARCH = 'usearch';

export const loadUsearch: HnswLoader = async () => {
  // The CommonJS entry: usearch 2.25's ESM entry cannot find its native binary
  // under plain Node (it looks for __dirname, which ESM lacks, and recurses forever).
  const mod = createRequire(import.meta.url)(USEARCH) as Partial<HnswModule> & { default?: Partial<HnswModule> };
  const Index = mod.Index ?? mod.default?.Index;
  if (typeof Index !== 'function') throw new Error('the usearch module has no Index class');
  return { Index };
};

/** Graph links per node (usearch `connectivity`). */
export const HNSW_CONNECTIVITY = 16;

/**
 * An HNSW graph (usearch) over the same slots as a FlatVectorIndex. It only
 * proposes candidates; exact cosines come from the flat index's stored rows.
 */
export class HnswVectorIndex {
  private graph: HnswGraph;
  private readonly inGraph = new Set<number>();

  constructor(
    private readonly mod: HnswModule,
    private readonly dims: number,
  ) {
    this.graph = this.fresh();
  }

  get size(): number {
    return this.inGraph.size;
  }

  /** Adds or replaces the vector at `slot` (a unit vector of `dims` floats). */
  set(slot: number, unit: Float32Array): void {
    if (this.inGraph.has(slot)) this.graph.remove(BigInt(slot));
    this.graph.add(BigInt(slot), unit, 1);
    this.inGraph.add(slot);
  }

  delete(slot: number): void {
    if (!this.inGraph.delete(slot)) return;
    this.graph.remove(BigInt(slot));
  }

  /** Slots of the (approximately) `k` nearest stored vectors to a unit query. */
  search(unitQuery: Float32Array, k: number): number[] {
    const n = Math.min(k, this.inGraph.size);
    if (n === 0) return [];
    const { keys } = this.graph.search(unitQuery, n, 1);
    const out: number[] = [];
    for (const key of keys) {
      const slot = Number(key);
      // usearch pads missing results; keep only live slots.
      if (this.inGraph.has(slot)) out.push(slot);
    }
    return out;
  }

  /** Writes the graph to `path`; its SHA-256 (hex), or null when the binding cannot save. */
  save(path: string): string | null {
    if (typeof this.graph.save !== 'function') return null;
    this.graph.save(path);
    return fileSha256(path);
  }

  /**
   * Loads a graph written by `save` for exactly the vectors stored in `flat`
   * (the snapshot saved with it). False, leaving the graph empty, when the
   * file cannot be read or does not hold one node per stored vector; the
   * caller then rebuilds.
   */
  loadFrom(path: string, sha256: string, flat: FlatVectorIndex, slots: number): boolean {
    const graph = this.fresh();
    if (typeof graph.load !== 'function') return false;
    try {
      // usearch trusts the file (a foreign or damaged one can crash the process): only our own, unchanged, is read.
      if (fileSha256(path) !== sha256) return false;
      graph.load(path);
    } catch {
      return false;
    }
    const live: number[] = [];
    for (let slot = 0; slot < slots; slot++) if (flat.has(slot)) live.push(slot);
    if (graph.size() !== live.length) return false;
    this.graph = graph;
    this.inGraph.clear();
    for (const slot of live) this.inGraph.add(slot);
    return true;
  }

  /** Rebuilds the graph from every vector stored in `flat`. */
  rebuild(flat: FlatVectorIndex, slots: number): void {
    this.graph = this.fresh();
    this.inGraph.clear();
    const keys: bigint[] = [];
    const rows: Float32Array[] = [];
    for (let slot = 0; slot < slots; slot++) {
      const row = flat.get(slot);
      if (!row) continue;
      keys.push(BigInt(slot));
      rows.push(row);
      this.inGraph.add(slot);
    }
    if (keys.length > 0) this.graph.add(BigUint64Array.from(keys), rows, 0);
  }

  private fresh(): HnswGraph {
    // 8-bit graph vectors: a quarter of the memory and several times faster to
    // build; they only rank candidates, whose exact cosines come from the flat rows.
    return new this.mod.Index({ metric: 'cos', connectivity: HNSW_CONNECTIVITY, dimensions: this.dims, quantization: 'i8' });
  }
}

function fileSha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}
