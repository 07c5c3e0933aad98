import { z } from 'zod';
import { DiscoveryError } from './errors.js';
import type { ServiceDocument } from './search-index.js';

const MAGIC = 0x53584246; // "FBXS" little-endian
const VERSION = 1;

/**
 * Layout: u32 magic, u32 version, u32 header length, header JSON (UTF-8),
 * zero padding to a multiple of 4, then `dims` float32 per document whose
 * header entry has a vector, in header order.
 */
const HeaderSchema = z.object({
  modelId: z.string().nullable(),
  dims: z.number().int().positive(),
  docs: z.array(
    z.tuple([z.string(), z.string(), z.string(), z.unknown(), z.union([z.literal(0), z.literal(1)])]),
  ),
});

export interface SnapshotEntry {
  doc: ServiceDocument;
  vector: Float32Array | null;
}

// Registry entries carry bigint amounts: keep them exact through JSON.
const BIGINT_TAG = '$bigint';
function replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? { [BIGINT_TAG]: value.toString() } : value;
}
function reviver(_key: string, value: unknown): unknown {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const tagged = (value as Record<string, unknown>)[BIGINT_TAG];
    if (keys.length === 1 && typeof tagged === 'string' && /^-?\d+$/.test(tagged)) return BigInt(tagged);
  }
  return value;
}

export function encodeSnapshot(entries: SnapshotEntry[], modelId: string | null, dims: number): Uint8Array {
  const header = JSON.stringify({
    modelId,
    dims,
    docs: entries.map((e) => [e.doc.id, e.doc.name, e.doc.description, e.doc.meta ?? null, e.vector ? 1 : 0]),
  }, replacer);
  const headerBytes = new TextEncoder().encode(header);
  const start = Math.ceil((12 + headerBytes.length) / 4) * 4;
  const withVectors = entries.filter((e) => e.vector).length;
  const out = new Uint8Array(start + withVectors * dims * 4);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, VERSION, true);
  view.setUint32(8, headerBytes.length, true);
  out.set(headerBytes, 12);
  const floats = new Float32Array(out.buffer, start, withVectors * dims);
  let k = 0;
  for (const e of entries) {
    if (!e.vector) continue;
    floats.set(e.vector, k * dims);
    k++;
  }
  return out;
}

export interface DecodedSnapshot {
  modelId: string | null;
  dims: number;
  docs: SnapshotEntry[];
}

export function decodeSnapshot(bytes: Uint8Array): DecodedSnapshot {
  const bad = (why: string) => new DiscoveryError('BAD_SNAPSHOT', `not a discovery snapshot: ${why}`);
  if (!(bytes instanceof Uint8Array) || bytes.length < 12) throw bad('too short');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw bad('wrong magic number');
  if (view.getUint32(4, true) !== VERSION) throw bad(`unsupported version ${view.getUint32(4, true)}`);
  const headerLength = view.getUint32(8, true);
  if (12 + headerLength > bytes.length) throw bad('truncated header');
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerLength)), reviver);
  } catch {
    throw bad('header is not JSON');
  }
  const parsed = HeaderSchema.safeParse(json);
  if (!parsed.success) throw bad(parsed.error.issues[0]?.message ?? 'invalid header');
  const { modelId, dims, docs } = parsed.data;
  const start = Math.ceil((12 + headerLength) / 4) * 4;
  const withVectors = docs.filter((d) => d[4] === 1).length;
  if (bytes.length !== start + withVectors * dims * 4) throw bad('vector section has the wrong length');
  // Copy so the floats are aligned whatever the input's byteOffset.
  const floats = new Float32Array(bytes.slice(start).buffer);
  let k = 0;
  return {
    modelId,
    dims,
    docs: docs.map(([id, name, description, meta, has]) => {
      const vector = has === 1 ? floats.subarray(k * dims, (k + 1) * dims) : null;
      if (has === 1) k++;
      return { doc: meta === null ? { id, name, description } : { id, name, description, meta }, vector };
    }),
  };
}
