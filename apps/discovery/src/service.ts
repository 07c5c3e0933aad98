import { join } from 'node:path';
import { rpc as StellarRpc } from '@stellar/stellar-sdk';
import {
  attachToCatalog,
  createEmbedder,
  createSearchIndex,
  type CatalogAttachment,
  type SearchHit,
  type SearchMode,
  type SearchIndex,
  type SearchStatus,
} from '@farebox/discovery';
import { createCatalogMirror, createRegistryClient, type CatalogMirror, type NetworkConfig, type RegistryAgent, type RegistryClient } from '@farebox/stellar';
import { SnapshotCursorStore, StateDir, type DiscoveryState } from './state.js';

export interface DiscoveryServiceOptions {
  network: NetworkConfig;
  /** Where the cursor and snapshots live (one folder per network inside). */
  dataDir: string;
  /** The search index; default hybrid with the model from `modelDir`, HNSW graph (`vectorIndex`). */
  searchIndex?: SearchIndex;
  /** Model folder (`FAREBOX_MODEL_DIR`); default `~/.cache/farebox/models`. */
  modelDir?: string;
  /** Download the model when it is missing (`FAREBOX_ALLOW_MODEL_DOWNLOAD=true`), in the background; default false. */
  allowModelDownload?: boolean;
  /** Where the model is downloaded from (`FAREBOX_MODEL_HUB_URL`); default https://huggingface.co/. */
  modelHubUrl?: string;
  /** 'hnsw' (default) or 'flat' (`FAREBOX_DISCOVERY_VECTOR_INDEX`). */
  vectorIndex?: 'hnsw' | 'flat';
  /** Registry access; default the network's registry contract. */
  registry?: RegistryClient;
  /** How often the registry's events are read, ms; default 100. */
  pollIntervalMs?: number;
  /** How often a changed index is snapshotted, ms; default 30 000 (and always at stop). */
  snapshotIntervalMs?: number;
  log?: (message: string, err?: unknown) => void;
}

export interface DiscoveryHealth {
  ok: boolean;
  ready: boolean;
  reasons: string[];
  service: 'farebox-discovery';
  network: string;
  contract_id: string;
  mode: SearchStatus['mode'];
  mode_reason: string | null;
  model: string | null;
  documents: number;
  vectors: number;
  pending_embeddings: number;
  vector_index: SearchStatus['vectorIndex'];
  vector_index_reason: string | null;
  /** Every registry event up to this ledger is applied. */
  ledger: number | null;
  network_ledger: number | null;
  lag_ledgers: number | null;
  last_sync_age_s: number | null;
  sync_failures: number;
  last_sync_error: string | null;
  /** Registry names left out since start because they break the service-name policy (each logged once). */
  skipped_services: number;
  /** Where the index came from at start: a snapshot (and its ledger) or empty. */
  restored_from: { ledger: number | null; saved_at: string; graph_loaded: boolean } | null;
  last_snapshot_at: string | null;
  /** Milliseconds from the service's creation: snapshot loaded, first registry sync done, ready. */
  startup_ms: { snapshot_loaded: number | null; first_sync: number | null; ready: number | null };
  uptime_s: number;
}

export interface DiscoveryService {
  readonly network: NetworkConfig;
  readonly index: SearchIndex;
  readonly mirror: CatalogMirror;
  /** Loads the snapshot, starts following the registry; resolves after the first sync is indexed. */
  start(): Promise<void>;
  /** Resolves once started and caught up (first sync indexed). */
  ready(): Promise<void>;
  isReady(): boolean;
  search(query: string, limit: number): Promise<SearchHit[]>;
  /** `search`, and which ranking served it (`hybrid`, or `keyword` without a model). */
  searchWithMode(query: string, limit: number): Promise<{ mode: SearchMode; hits: SearchHit[] }>;
  /** The whole catalog, sorted by service name. */
  list(): RegistryAgent[];
  get(service: string): RegistryAgent | undefined;
  health(): Promise<DiscoveryHealth>;
  /** Writes a snapshot now (the cursor with the index and graph). */
  snapshot(): Promise<DiscoveryState>;
  /** Stops following, writes a last snapshot. */
  stop(): Promise<void>;
}

const isAgent = (m: unknown): m is RegistryAgent =>
  !!m &&
  typeof m === 'object' &&
  typeof (m as RegistryAgent).service === 'string' &&
  typeof (m as RegistryAgent).pricePerCall === 'bigint' &&
  typeof (m as RegistryAgent).owner === 'string';

/**
 * One discovery instance: a catalog mirror of its own (the registry's events
 * from a persisted cursor, each touched service confirmed with `get_agent`),
 * the hybrid index kept in step with it, and snapshots so that a restart
 * neither re-embeds the catalog nor rebuilds the HNSW graph.
 */
export function createDiscoveryService(options: DiscoveryServiceOptions): DiscoveryService {
  const { network } = options;
  const log = options.log ?? (() => undefined);
  const registry = options.registry ?? createRegistryClient(network);
  const index =
    options.searchIndex ??
    createSearchIndex({
      embedder: createEmbedder({
        ...(options.modelDir ? { modelDir: options.modelDir } : {}),
        allowRemote: options.allowModelDownload === true,
        ...(options.modelHubUrl ? { hubUrl: options.modelHubUrl } : {}),
      }),
      vectorIndex: options.vectorIndex ?? 'hnsw',
    });
  const stateDir = new StateDir(join(options.dataDir, network.name), network.name, network.registryContractId ?? '');
  const snapshotEvery = options.snapshotIntervalMs ?? 30_000;
  const rpc = new StellarRpc.Server(network.rpcUrl, { allowHttp: network.allowHttp });
  const startedAt = Date.now();
  const t0 = performance.now();
  const startup: DiscoveryHealth['startup_ms'] = { snapshot_loaded: null, first_sync: null, ready: null };
  const mark = () => Math.round(performance.now() - t0);

  let cursorStore = new SnapshotCursorStore(undefined);
  let mirror: CatalogMirror | undefined;
  let attachment: CatalogAttachment<RegistryAgent> | undefined;
  let ready = false;
  let restoredFrom: DiscoveryHealth['restored_from'] = null;
  let lastSnapshotAt: string | null = null;
  /** Changes since the last snapshot (index changes and cursor moves). */
  let changes = 0;
  let written = { changes: 0, cursorVersion: 0 };
  let timer: ReturnType<typeof setInterval> | undefined;
  let starting: Promise<void> | undefined;
  let listing: { changes: number; agents: RegistryAgent[] } | undefined;
  /** The snapshot (if any) is loaded: from here on a snapshot may be written. */
  let restored = false;
  let stopped = false;
  let resolveReady!: () => void;
  const readyPromise = new Promise<void>((r) => (resolveReady = r));

  function requireMirror(): CatalogMirror {
    if (!mirror) throw new Error('discovery service not started');
    return mirror;
  }

  async function restore(): Promise<RegistryAgent[]> {
    let saved: Awaited<ReturnType<StateDir['read']>>;
    try {
      saved = await stateDir.read();
    } catch (err) {
      log('discovery snapshot unreadable, indexing the catalog from the start', err);
      return [];
    }
    if (!saved) return [];
    const graphPath = stateDir.graphPath(saved.state);
    try {
      await index.load(saved.bytes, graphPath && saved.state.graphSha256 ? { graphPath, graphSha256: saved.state.graphSha256 } : {});
    } catch (err) {
      log('discovery snapshot rejected, indexing the catalog from the start', err);
      return [];
    }
    cursorStore = new SnapshotCursorStore(saved.state.cursor ?? undefined);
    restoredFrom = { ledger: saved.state.ledger, saved_at: saved.state.savedAt, graph_loaded: false };
    lastSnapshotAt = saved.state.savedAt;
    const agents: RegistryAgent[] = [];
    for (const id of index.ids()) {
      const meta = index.get(id)?.meta;
      if (isAgent(meta)) agents.push(meta);
    }
    return agents;
  }

  async function snapshot(): Promise<DiscoveryState> {
    const cursor = cursorStore.cursor;
    const seen = { changes, cursorVersion: cursorStore.version };
    const ledger = mirror?.status().syncedLedger ?? restoredFrom?.ledger ?? null;
    const state = await stateDir.write({ take: (graphPath) => index.snapshotWithGraph({ graphPath }) }, cursor, ledger);
    written = seen;
    lastSnapshotAt = state.savedAt;
    return state;
  }

  const dirty = () => changes !== written.changes || cursorStore.version !== written.cursorVersion;

  async function start(): Promise<void> {
    const initial = await restore();
    restored = true;
    startup.snapshot_loaded = mark();
    if (stopped) return;
    const m = createCatalogMirror({
      registry,
      cursorStore,
      initial,
      pollIntervalMs: options.pollIntervalMs ?? 100,
      onChange: (change) => {
        changes++;
        attachment?.handle(change);
      },
      onError: (err) => log('registry sync failed (will retry)', err),
      onSkip: ({ shown, reason }) => log(`registry entry "${shown}" skipped: ${reason}`),
    });
    mirror = m;
    await m.start();
    await m.ready();
    startup.first_sync = mark();
    // The mirror's entries unsorted: after a snapshot load they are the index's own objects, so re-listing them is cheap.
    const source = { list: () => (m.values ? [...m.values()] : m.list()) };
    attachment = attachToCatalog(index, source, { onError: (err) => log('search indexing failed', err) });
    await attachment.ready;
    if (restoredFrom) {
      await index.idle();
      restoredFrom.graph_loaded = index.status().graphLoadedFromSnapshot === true;
    }
    if (snapshotEvery > 0) {
      timer = setInterval(() => {
        if (dirty()) snapshot().catch((err) => log('discovery snapshot failed (will retry)', err));
      }, snapshotEvery);
      timer.unref?.();
    }
    ready = true;
    startup.ready = mark();
    resolveReady();
  }

  let latestLedger: { at: number; value: Promise<number> } | undefined;
  function networkLedger(): Promise<number> {
    if (!latestLedger || Date.now() - latestLedger.at > 1_000) {
      const value = rpc.getLatestLedger().then((r) => r.sequence);
      value.catch(() => (latestLedger = undefined));
      latestLedger = { at: Date.now(), value };
    }
    return latestLedger.value;
  }

  return {
    network,
    index,
    get mirror() {
      return requireMirror();
    },
    start() {
      starting ??= start();
      return starting;
    },
    ready: () => readyPromise,
    isReady: () => ready,
    search: (query, limit) => index.search(query, { limit }),
    searchWithMode: (query, limit) => index.searchWithMode(query, { limit }),
    list() {
      if (!mirror) return [];
      // Sorted once per catalog change, not per request (100k entries take a while to sort).
      if (!listing || listing.changes !== changes) listing = { changes, agents: mirror.list() };
      return listing.agents;
    },
    get: (service) => mirror?.get(service),
    async health() {
      const s = index.status();
      const m = mirror?.status();
      const latest = await Promise.race([networkLedger(), new Promise<null>((r) => setTimeout(() => r(null), 2_000).unref())]).catch(() => null);
      const synced = m?.syncedLedger ?? null;
      const reasons: string[] = [];
      if (!ready) reasons.push(mirror ? 'catching up with the registry (first sync)' : 'loading');
      if (m && m.failures > 0) reasons.push(`registry sync failing (${m.failures} in a row): ${m.lastError ?? 'unknown error'}`);
      return {
        ok: ready && (m?.failures ?? 0) === 0,
        ready,
        reasons,
        service: 'farebox-discovery',
        network: network.name,
        contract_id: network.registryContractId ?? '',
        mode: s.mode,
        mode_reason: s.reason ?? null,
        model: s.model ?? null,
        documents: s.documents,
        vectors: s.vectors,
        pending_embeddings: s.pendingEmbeddings,
        vector_index: s.vectorIndex,
        vector_index_reason: s.vectorIndexReason ?? null,
        ledger: synced,
        network_ledger: latest,
        lag_ledgers: latest !== null && synced !== null ? Math.max(0, latest - synced) : null,
        last_sync_age_s: m?.lastSyncAt ? Math.round((Date.now() - m.lastSyncAt) / 100) / 10 : null,
        sync_failures: m?.failures ?? 0,
        last_sync_error: m?.lastError ?? null,
        skipped_services: m?.skipped ?? 0,
        restored_from: restoredFrom,
        last_snapshot_at: lastSnapshotAt,
        startup_ms: { ...startup },
        uptime_s: Math.round((Date.now() - startedAt) / 1000),
      };
    },
    snapshot,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await mirror?.stop();
      attachment?.detach();
      if (restored && (dirty() || !lastSnapshotAt)) await snapshot().catch((err) => log('discovery snapshot at stop failed', err));
    },
  };
}
