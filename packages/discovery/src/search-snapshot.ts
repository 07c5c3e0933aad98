import { ANALYZER } from './analyze.js';
import type { Bm25Index } from './bm25.js';
import { DiscoveryError } from './errors.js';
import type { StoredDoc } from './search-types.js';
import { decodeSnapshot, encodeSnapshot, type SnapshotParts } from './snapshot.js';
import type { FlatVectorIndex } from './vectors.js';

/** What a snapshot is made from (search-index.ts). */
export interface SnapshotSource {
  readonly bm25: Bm25Index;
  readonly vectors: FlatVectorIndex;
  readonly docs: ReadonlyMap<string, StoredDoc>;
  readonly slotDocs: ReadonlyArray<StoredDoc | undefined>;
  readonly modelId: string | null;
  readonly dims: number;
}

/** A snapshot's contents, every section checked, for the index to take over. */
export interface DecodedIndex {
  snap: SnapshotParts;
  docs: StoredDoc[];
  offsets: Int32Array;
  postingSlots: Int32Array;
  postingTfs: Float32Array;
  docLen: Float32Array;
  present: Uint8Array;
  rows: Float32Array;
}

/** The documents, keyword index and vectors as snapshot bytes. */
export function encodeIndex(source: SnapshotSource): Uint8Array {
  const { bm25, vectors, docs, slotDocs, dims } = source;
  const slots = slotDocs.length;
  const kw = bm25.exportState();
  const docLen = new Float32Array(slots);
  docLen.set(kw.docLen.subarray(0, slots));
  const { present, rows } = vectors.exportRows(slots);
  return encodeSnapshot({
    modelId: source.modelId,
    dims,
    stride: vectors.stride,
    slots,
    analyzer: ANALYZER,
    docs: [...docs.values()].map((d) => [d.id, d.name, d.description, d.meta ?? null, d.slot]),
    terms: kw.terms,
    arrays: { offsets: kw.offsets, postingSlots: kw.slots, postingTfs: kw.tfs, docLen, present, rows },
  });
}

/** Reads snapshot bytes and checks that the sections and documents agree; throws BAD_SNAPSHOT otherwise. */
export function decodeIndex(bytes: Uint8Array): DecodedIndex {
  const snap = decodeSnapshot(bytes);
  const a = snap.arrays;
  const need = { offsets: Int32Array, postingSlots: Int32Array, postingTfs: Float32Array, docLen: Float32Array, present: Uint8Array, rows: Float32Array };
  for (const [name, Ctor] of Object.entries(need)) {
    if (!(a[name] instanceof Ctor)) throw new DiscoveryError('BAD_SNAPSHOT', `not a discovery snapshot: section ${name} is missing`);
  }
  const offsets = a['offsets'] as Int32Array;
  const postingSlots = a['postingSlots'] as Int32Array;
  const docLen = a['docLen'] as Float32Array;
  if (offsets.length !== snap.terms.length + 1 || offsets[snap.terms.length] !== postingSlots.length || docLen.length !== snap.slots) {
    throw new DiscoveryError('BAD_SNAPSHOT', 'not a discovery snapshot: keyword index sections disagree');
  }
  for (const slot of postingSlots) {
    if (slot < 0 || slot >= snap.slots) throw new DiscoveryError('BAD_SNAPSHOT', 'not a discovery snapshot: posting outside the slot range');
  }
  const seenSlots = new Set<number>();
  const seenIds = new Set<string>();
  const parsedDocs = snap.docs.map(([id, name, description, meta, slot]) => {
    if (seenSlots.has(slot) || seenIds.has(id)) throw new DiscoveryError('BAD_SNAPSHOT', `not a discovery snapshot: document ${id} is listed twice`);
    seenSlots.add(slot);
    seenIds.add(id);
    // Fields were checked by decodeSnapshot.
    const doc: StoredDoc = { id, name, description, slot, text: `${name}: ${description}` };
    if (meta !== null) doc.meta = meta;
    return doc;
  });
  return {
    snap,
    docs: parsedDocs,
    offsets,
    postingSlots,
    postingTfs: a['postingTfs'] as Float32Array,
    docLen,
    present: a['present'] as Uint8Array,
    rows: a['rows'] as Float32Array,
  };
}
