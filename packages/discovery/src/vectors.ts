import { DiscoveryError } from './errors.js';
import { createDotKernel, type DotKernel } from './simd.js';

const PAGE = 65_536;

/**
 * Exact cosine index over unit vectors in one contiguous Float32Array (inside
 * WebAssembly memory so the SIMD kernel can scan it in place). Slots are dense
 * integers chosen by the caller; an empty slot is an all-zero row.
 *
 * Memory layout: [query row][rows 0..capacity-1][scores 0..capacity-1].
 */
export class FlatVectorIndex {
  readonly dims: number;
  /** Floats per row: dims rounded up to a multiple of 8 (zero padded). */
  readonly stride: number;
  private kernel: DotKernel | null;
  private buffer: Float32Array;
  private capacity = 0;
  private present: Uint8Array = new Uint8Array(0);
  private highWater = 0;
  private stored = 0;

  constructor(dims: number, initialCapacity = 1024) {
    if (!Number.isInteger(dims) || dims <= 0) {
      throw new DiscoveryError('INVALID_OPTIONS', `vector dimensions must be a positive integer, got ${dims}`);
    }
    this.dims = dims;
    this.stride = Math.ceil(dims / 8) * 8;
    this.kernel = createDotKernel(1);
    this.buffer = this.kernel ? new Float32Array(this.kernel.memory.buffer) : new Float32Array(0);
    this.ensureCapacity(initialCapacity);
  }

  /** Number of slots holding a vector. */
  get count(): number {
    return this.stored;
  }

  /** Whether the SIMD kernel is in use (false means the plain-JS fallback loop). */
  get simd(): boolean {
    return this.kernel !== null;
  }

  /** Bytes held for vectors and scratch space. */
  get bytes(): number {
    return this.buffer.byteLength + this.present.byteLength;
  }

  has(slot: number): boolean {
    return slot < this.capacity && this.present[slot] === 1;
  }

  /** Stores `vector` (any length-`dims` vector; it is normalised here). */
  set(slot: number, vector: ArrayLike<number>): void {
    if (vector.length !== this.dims) {
      throw new DiscoveryError('DIMENSION_MISMATCH', `expected a ${this.dims}-dimension vector, got ${vector.length}`);
    }
    let norm = 0;
    for (let i = 0; i < this.dims; i++) norm += vector[i]! * vector[i]!;
    if (!(norm > 0) || !Number.isFinite(norm)) {
      throw new DiscoveryError('INVALID_DOCUMENT', 'an embedding must be a finite, non-zero vector');
    }
    this.ensureCapacity(slot + 1);
    const inv = 1 / Math.sqrt(norm);
    const base = this.rowOffset(slot);
    for (let i = 0; i < this.dims; i++) this.buffer[base + i] = vector[i]! * inv;
    if (this.present[slot] !== 1) {
      this.present[slot] = 1;
      this.stored++;
    }
    if (slot >= this.highWater) this.highWater = slot + 1;
  }

  delete(slot: number): void {
    if (!this.has(slot)) return;
    const base = this.rowOffset(slot);
    this.buffer.fill(0, base, base + this.stride);
    this.present[slot] = 0;
    this.stored--;
  }

  /** A copy of the stored unit vector, or null. */
  get(slot: number): Float32Array | null {
    if (!this.has(slot)) return null;
    const base = this.rowOffset(slot);
    return this.buffer.slice(base, base + this.dims);
  }

  /** Cosine between the stored vector at `slot` and a unit query. */
  cosine(slot: number, unitQuery: Float32Array): number {
    if (!this.has(slot)) return 0;
    const base = this.rowOffset(slot);
    let s = 0;
    for (let i = 0; i < this.dims; i++) s += this.buffer[base + i]! * unitQuery[i]!;
    return s;
  }

  /**
   * Cosine of `query` against every slot below the high-water mark. Returns a
   * view valid until the next call (empty slots score 0) and the unit query.
   */
  scanAll(query: ArrayLike<number>): { scores: Float32Array; unitQuery: Float32Array } {
    if (query.length !== this.dims) {
      throw new DiscoveryError('DIMENSION_MISMATCH', `expected a ${this.dims}-dimension query vector, got ${query.length}`);
    }
    let norm = 0;
    for (let i = 0; i < this.dims; i++) norm += query[i]! * query[i]!;
    const inv = norm > 0 && Number.isFinite(norm) ? 1 / Math.sqrt(norm) : 0;
    const q = this.buffer.subarray(0, this.stride);
    q.fill(0);
    // A zero or non-finite query (e.g. a model that saw only unknown tokens) matches nothing.
    if (inv > 0) for (let i = 0; i < this.dims; i++) q[i] = query[i]! * inv;
    const n = this.highWater;
    const outFloat = this.stride * (1 + this.capacity);
    const scores = this.buffer.subarray(outFloat, outFloat + n);
    if (this.kernel) {
      this.kernel.dots(this.stride * 4, 0, outFloat * 4, n, this.stride * 4);
    } else {
      const m = this.buffer;
      const d = this.stride;
      for (let r = 0, o = d; r < n; r++, o += d) {
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        for (let j = 0; j < d; j += 4) {
          s0 += m[o + j]! * q[j]!;
          s1 += m[o + j + 1]! * q[j + 1]!;
          s2 += m[o + j + 2]! * q[j + 2]!;
          s3 += m[o + j + 3]! * q[j + 3]!;
        }
        scores[r] = s0 + s1 + s2 + s3;
      }
    }
    return { scores, unitQuery: q.slice(0, this.dims) };
  }

  /** Rows 0..slots-1 as stored (unit vectors padded to `stride`) and which of them hold a vector. */
  exportRows(slots: number): { present: Uint8Array; rows: Float32Array } {
    const n = Math.min(slots, this.capacity);
    const present = new Uint8Array(slots);
    present.set(this.present.subarray(0, n));
    const rows = new Float32Array(slots * this.stride);
    rows.set(this.buffer.subarray(this.stride, this.stride * (1 + n)));
    return { present, rows };
  }

  /** Replaces the contents with rows from `exportRows` of an index with the same stride. */
  importRows(present: Uint8Array, rows: Float32Array): void {
    if (rows.length !== present.length * this.stride) {
      throw new DiscoveryError('BAD_SNAPSHOT', 'vector rows do not match the index dimensions');
    }
    this.clear();
    this.ensureCapacity(present.length);
    this.buffer.set(rows, this.stride);
    this.present.set(present);
    let stored = 0;
    let high = 0;
    for (let i = 0; i < present.length; i++) {
      if (present[i] === 1) {
        stored++;
        high = i + 1;
      }
    }
    this.stored = stored;
    this.highWater = high;
  }

  /** Removes every vector. */
  clear(): void {
    this.buffer.fill(0, 0, this.stride * (1 + this.capacity) + this.capacity);
    this.present.fill(0);
    this.highWater = 0;
    this.stored = 0;
  }

  private rowOffset(slot: number): number {
    return this.stride * (1 + slot);
  }

  private ensureCapacity(rows: number): void {
    if (rows <= this.capacity) return;
    let next = Math.max(1024, this.capacity);
    while (next < rows) next *= 2;
    const floats = this.stride * (1 + next) + next;
    if (this.kernel) {
      const needBytes = floats * 4;
      const have = this.kernel.memory.buffer.byteLength;
      if (needBytes > have) this.kernel.memory.grow(Math.ceil((needBytes - have) / PAGE));
      this.buffer = new Float32Array(this.kernel.memory.buffer);
      // The score area of the old capacity now lies inside the row area: clear it.
      const oldScores = this.stride * (1 + this.capacity);
      this.buffer.fill(0, oldScores, oldScores + this.capacity);
    } else {
      const grown = new Float32Array(floats);
      grown.set(this.buffer.subarray(0, this.stride * (1 + this.capacity)));
      this.buffer = grown;
    }
    const present = new Uint8Array(next);
    present.set(this.present);
    this.present = present;
    this.capacity = next;
  }
}
