import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { CursorStore } from '@farebox/stellar';

/**
 * What a discovery instance keeps on disk, in `dataDir`:
 *
 *   state-<network>.json     the commit point: cursor, ledger, file names (written last, atomically)
 *   index-<id>.bin           the search index snapshot (documents, keyword index, vectors)
 *   graph-<id>.usearch       the HNSW graph saved with that snapshot (when the index uses one)
 *
 * The cursor in the state file never runs ahead of the snapshot it names: it
 * is read before the snapshot is taken, and the index receives every change
 * before the mirror moves its cursor. A restart resumes from that cursor; events
 * it reads again are confirmed with `get_agent` again, which is harmless.
 */
export const StateSchema = z.object({
  version: z.literal(1),
  network: z.string(),
  contractId: z.string(),
  cursor: z.string().nullable(),
  ledger: z.number().int().nullable(),
  index: z.string().regex(/^index-[0-9a-f]{16}\.bin$/),
  graph: z
    .string()
    .regex(/^graph-[0-9a-f]{16}\.usearch$/)
    .nullable(),
  graphSha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  savedAt: z.string(),
});
export type DiscoveryState = z.infer<typeof StateSchema>;

export interface SnapshotSource {
  /** Synchronously: the index bytes and, with `graphPath`, the HNSW graph written beside them. */
  take(graphPath: string): { bytes: Uint8Array; graphSha256: string | null };
}

/** The mirror's cursor, kept in memory and committed with each snapshot. */
export class SnapshotCursorStore implements CursorStore {
  cursor: string | undefined;
  /** Bumped by every save: the snapshot writer compares it with what it last wrote. */
  version = 0;
  constructor(initial: string | undefined) {
    this.cursor = initial;
  }
  async load() {
    return this.cursor;
  }
  async save(cursor: string) {
    if (cursor === this.cursor) return;
    this.cursor = cursor;
    this.version++;
  }
}

export class StateDir {
  readonly statePath: string;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    readonly dir: string,
    readonly network: string,
    readonly contractId: string,
  ) {
    this.statePath = join(dir, `state-${network}.json`);
  }

  /** The last committed state and its index bytes; undefined when none (or for another registry contract). */
  async read(): Promise<{ state: DiscoveryState; bytes: Uint8Array } | undefined> {
    let text: string;
    try {
      text = await readFile(this.statePath, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    const parsed = StateSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`${this.statePath} is not a discovery state file: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const state = parsed.data;
    if (state.network !== this.network || state.contractId !== this.contractId) return undefined;
    const file = await readFile(join(this.dir, state.index));
    // A view, not a copy (the file is mostly vectors: 150 MB at 100k services).
    const bytes = new Uint8Array(file.buffer, file.byteOffset, file.byteLength);
    return { state, bytes };
  }

  graphPath(state: DiscoveryState): string | undefined {
    return state.graph ? join(this.dir, state.graph) : undefined;
  }

  /**
   * Writes a snapshot: the index (and graph) under new names, then the state
   * file by rename (the commit), then removes the files of older snapshots.
   * One write at a time.
   */
  write(source: SnapshotSource, cursor: string | undefined, ledger: number | null): Promise<DiscoveryState> {
    const next = this.writing
      .catch(() => undefined)
      .then(async () => {
        await mkdir(this.dir, { recursive: true, mode: 0o700 });
        const id = randomBytes(8).toString('hex');
        const graphName = `graph-${id}.usearch`;
        const { bytes, graphSha256 } = source.take(join(this.dir, graphName));
        const indexName = `index-${id}.bin`;
        const tmp = join(this.dir, `${indexName}.${process.pid}.tmp`);
        await writeFile(tmp, bytes, { mode: 0o600 });
        await rename(tmp, join(this.dir, indexName));
        const state: DiscoveryState = {
          version: 1,
          network: this.network,
          contractId: this.contractId,
          cursor: cursor ?? null,
          ledger,
          index: indexName,
          graph: graphSha256 ? graphName : null,
          graphSha256,
          savedAt: new Date().toISOString(),
        };
        const stateTmp = `${this.statePath}.${process.pid}.tmp`;
        await writeFile(stateTmp, JSON.stringify(state, null, 2), { mode: 0o600 });
        await rename(stateTmp, this.statePath);
        // Older snapshots (and a graph written for nothing) go.
        const keep = new Set([indexName, ...(state.graph ? [state.graph] : [])]);
        for (const name of await readdir(this.dir)) {
          if (/^(index-[0-9a-f]{16}\.bin|graph-[0-9a-f]{16}\.usearch)$/.test(name) && !keep.has(name)) await rm(join(this.dir, name), { force: true });
        }
        return state;
      });
    this.writing = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }
}
