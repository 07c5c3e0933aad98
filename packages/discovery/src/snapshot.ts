import { z } from 'zod';
import { DiscoveryError } from './errors.js';

const MAGIC = 0x53584246; // "FBXS" little-endian
const VERSION = 2;

/**
 * Layout: u32 magic, u32 version, u32 header length, header JSON (UTF-8), then
 * the typed-array sections the header lists, in order, each starting at a
 * multiple of 4 bytes. Loading copies arrays; nothing is re-tokenised or
 * re-embedded when the model matches.
 */
const SECTION_TYPES = { i32: Int32Array, f32: Float32Array, u8: Uint8Array } as const;
type SectionType = keyof typeof SECTION_TYPES;
type SectionArray = Int32Array | Float32Array | Uint8Array;
/** Sections the loader copies out at once (vectors.importRows). */
const VIEW_SECTIONS = new Set(['rows', 'present']);

const HeaderSchema = z.object({
  modelId: z.string().nullable(),
  dims: z.number().int().positive(),
  stride: z.number().int().positive(),
  slots: z.number().int().nonnegative(),
  analyzer: z.string().optional(),
  // Checked by hand below: zod takes seconds on 100k entries, a loop milliseconds.
  docs: z.array(z.unknown()),
  terms: z.array(z.unknown()),
  sections: z.array(z.object({ name: z.string(), type: z.enum(['i32', 'f32', 'u8']), length: z.number().int().nonnegative() })),
});

export interface SnapshotParts {
  modelId: string | null;
  dims: number;
  stride: number;
  /** Number of slots (live and free). */
  slots: number;
  /** How the keyword terms were made (ANALYZER in analyze.ts); absent in older snapshots. */
  analyzer?: string;
  /** [id, name, description, meta, slot] */
  docs: Array<[string, string, string, unknown, number]>;
  terms: string[];
  arrays: Record<string, SectionArray>;
}

// Registry entries carry bigint amounts: keep them exact through JSON.
const BIGINT_TAG = '$bigint';
function replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? { [BIGINT_TAG]: value.toString() } : value;
}
// A JSON.parse reviver would visit every value of the header; only metadata can hold bigints.
function revive(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(revive);
  const obj = value as Record<string, unknown>;
  const tagged = obj[BIGINT_TAG];
  if (typeof tagged === 'string' && Object.keys(obj).length === 1 && /^-?\d+$/.test(tagged)) return BigInt(tagged);
  for (const key of Object.keys(obj)) obj[key] = revive(obj[key]);
  return obj;
}

function typeOf(a: SectionArray): SectionType {
  return a instanceof Int32Array ? 'i32' : a instanceof Float32Array ? 'f32' : 'u8';
}

export function encodeSnapshot(parts: SnapshotParts): Uint8Array {
  const sections = Object.entries(parts.arrays).map(([name, a]) => ({ name, type: typeOf(a), length: a.length }));
  const header = new TextEncoder().encode(
    JSON.stringify(
      {
        modelId: parts.modelId,
        dims: parts.dims,
        stride: parts.stride,
        slots: parts.slots,
        analyzer: parts.analyzer,
        docs: parts.docs,
        terms: parts.terms,
        sections,
      },
      replacer,
    ),
  );
  const align = (n: number) => Math.ceil(n / 4) * 4;
  let size = align(12 + header.length);
  for (const a of Object.values(parts.arrays)) size += align(a.byteLength);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, VERSION, true);
  view.setUint32(8, header.length, true);
  out.set(header, 12);
  let at = align(12 + header.length);
  for (const a of Object.values(parts.arrays)) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at += align(a.byteLength);
  }
  return out;
}

export function decodeSnapshot(bytes: Uint8Array): SnapshotParts {
  const bad = (why: string) => new DiscoveryError('BAD_SNAPSHOT', `not a discovery snapshot: ${why}`);
  if (!(bytes instanceof Uint8Array) || bytes.length < 12) throw bad('too short');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw bad('wrong magic number');
  if (view.getUint32(4, true) !== VERSION) throw bad(`unsupported version ${view.getUint32(4, true)}`);
  const headerLength = view.getUint32(8, true);
  if (12 + headerLength > bytes.length) throw bad('truncated header');
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerLength)));
  } catch {
    throw bad('header is not JSON');
  }
  const parsed = HeaderSchema.safeParse(json);
  if (!parsed.success) throw bad(parsed.error.issues[0]?.message ?? 'invalid header');
  const h = parsed.data;
  const align = (n: number) => Math.ceil(n / 4) * 4;
  let at = align(12 + headerLength);
  const arrays: Record<string, SectionArray> = {};
  for (const s of h.sections) {
    const Ctor = SECTION_TYPES[s.type];
    const byteLength = s.length * Ctor.BYTES_PER_ELEMENT;
    if (at + byteLength > bytes.length) throw bad(`section ${s.name} is truncated`);
    // The vector rows are copied into the index by the loader: an aligned view
    // saves copying them twice. Other sections are copied (the index keeps them,
    // and must not keep the whole input alive), as is anything unaligned.
    arrays[s.name] =
      VIEW_SECTIONS.has(s.name) && (bytes.byteOffset + at) % Ctor.BYTES_PER_ELEMENT === 0
        ? new Ctor(bytes.buffer as ArrayBuffer, bytes.byteOffset + at, s.length)
        : new Ctor(bytes.slice(at, at + byteLength).buffer);
    at += align(byteLength);
  }
  if (at !== bytes.length) throw bad('unexpected trailing bytes');
  for (const d of h.docs) {
    if (
      !Array.isArray(d) ||
      d.length !== 5 ||
      typeof d[0] !== 'string' ||
      d[0].length === 0 ||
      d[0].length > 256 ||
      typeof d[1] !== 'string' ||
      d[1].length > 256 ||
      typeof d[2] !== 'string' ||
      d[2].length > 8192 ||
      !Number.isInteger(d[4]) ||
      d[4] < 0 ||
      d[4] >= h.slots
    ) {
      throw bad(`invalid document entry ${JSON.stringify(Array.isArray(d) ? d[0] : d)}`);
    }
    if (d[3] !== null) d[3] = revive(d[3]);
  }
  for (const t of h.terms) if (typeof t !== 'string') throw bad('invalid term');
  return {
    modelId: h.modelId,
    dims: h.dims,
    stride: h.stride,
    slots: h.slots,
    ...(h.analyzer !== undefined ? { analyzer: h.analyzer } : {}),
    docs: h.docs as Array<[string, string, string, unknown, number]>,
    terms: h.terms as string[],
    arrays,
  };
}
