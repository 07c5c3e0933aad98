import { readFile } from 'node:fs/promises';
import { printable, serviceNameProblem } from '@farebox/protocol';
import { writeFileAtomic } from '@farebox/protocol/files';
import type { RegistryAgent, RegistryClient } from './registry.js';

/**
 * Where a catalog mirror keeps its place in the event stream. `loadServices` /
 * `saveServices` are optional: with them, a restarted mirror re-confirms the
 * services it knew before instead of losing those registered before its cursor.
 */
export interface CursorStore {
  load(): Promise<string | undefined>;
  save(cursor: string): Promise<void>;
  loadServices?(): Promise<string[] | undefined>;
  saveServices?(services: string[]): Promise<void>;
}

export type CatalogChange = { type: 'upsert' | 'remove'; agent?: RegistryAgent; service: string };

export interface CatalogMirrorOptions {
  registry: RegistryClient;
  cursorStore: CursorStore;
  /** Poll interval while following events; default 500 ms. */
  pollIntervalMs?: number;
  /** Upper bound of the retry backoff after RPC errors; default 30 s. */
  maxBackoffMs?: number;
  onChange?: (change: CatalogChange) => void;
  /**
   * Entries known from a snapshot taken at the store's cursor: listed at once
   * (no `onChange`, no `get_agent` each); the events after the cursor then
   * confirm whatever changed since.
   */
  initial?: Iterable<RegistryAgent>;
  /** Called with each failed sync (the mirror keeps its services and retries). */
  onError?: (error: unknown) => void;
  /**
   * Called once per name the mirror leaves out because it breaks the service-name policy of
   * `@farebox/protocol` (anyone can write any name to the registry contract): never listed,
   * searched or called. `reason` is the policy's message; `shown` the name with everything
   * but printable ASCII escaped (`\u0435cho`), fit for a log line.
   */
  onSkip?: (skipped: { service: string; shown: string; reason: string }) => void;
  /** The clock `status().lastSyncAt` is read from, in epoch ms (default `Date.now`; a host with a clock of its own passes it). */
  now?: () => number;
}

export interface CatalogMirror {
  start(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Reads every new event once, confirms the touched services, returns the number of events read.
   * Called while a sync is running, it runs another one after it, so events emitted before the call are read.
   */
  syncOnce(): Promise<number>;
  /**
   * Confirms one service now from the registry (`get_agent`) and applies the change, as an event
   * for it would: what a registration made through this process must show at once.
   */
  confirm(service: string): Promise<RegistryAgent | undefined>;
  list(): RegistryAgent[];
  /** The same entries as `list()`, unsorted and not copied (sorting 100k names takes a while). */
  values?(): Iterable<RegistryAgent>;
  get(service: string): RegistryAgent | undefined;
  /** Resolves after the first successful sync. */
  ready(): Promise<void>;
  /** How far the mirror has read: for health checks and metrics. */
  status(): CatalogMirrorStatus;
}

export interface CatalogMirrorStatus {
  /** The network's latest ledger as of the last successful sync (every event up to it is applied); null before the first. */
  syncedLedger: number | null;
  /** When the last sync succeeded (ms since the epoch); null before the first. */
  lastSyncAt: number | null;
  /** Syncs failed in a row since the last success. */
  failures: number;
  lastError: string | null;
  /** Registry names left out since start because they break the service-name policy (each counted once). */
  skipped: number;
}

/** A cursor store in memory (tests, short-lived processes). */
export class MemoryCursorStore implements CursorStore {
  private cursor: string | undefined;
  private services: string[] | undefined;
  async load() {
    return this.cursor;
  }
  async save(cursor: string) {
    this.cursor = cursor;
  }
  async loadServices() {
    return this.services;
  }
  async saveServices(services: string[]) {
    this.services = [...services];
  }
}

/** A cursor store in a JSON file, written atomically (temp file + rename). */
export class FileCursorStore implements CursorStore {
  private state: { cursor?: string; services?: string[] } | undefined;
  constructor(readonly path: string) {}

  private reading: Promise<{ cursor?: string; services?: string[] }> | undefined;
  /** Reads the file once; every caller then shares the same state object. */
  private read(): Promise<{ cursor?: string; services?: string[] }> {
    this.reading ??= this.readFile();
    return this.reading;
  }
  private async readFile(): Promise<{ cursor?: string; services?: string[] }> {
    if (this.state) return this.state;
    try {
      const parsed: unknown = JSON.parse(await readFile(this.path, 'utf8'));
      const obj = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
      this.state = {};
      if (typeof obj.cursor === 'string') this.state.cursor = obj.cursor;
      if (Array.isArray(obj.services)) this.state.services = obj.services.filter((s): s is string => typeof s === 'string');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.reading = undefined;
        throw e;
      }
      this.state = {};
    }
    return this.state;
  }
  private writing: Promise<void> = Promise.resolve();
  /** One write at a time (a confirmation and a sync may save together), each the latest state. */
  private write(): Promise<void> {
    const next = this.writing
      .catch(() => undefined)
      .then(async () => {
        await writeFileAtomic(this.path, JSON.stringify(this.state ?? {}));
      });
    this.writing = next;
    return next;
  }
  async load() {
    return (await this.read()).cursor;
  }
  async save(cursor: string) {
    (await this.read()).cursor = cursor;
    await this.write();
  }
  async loadServices() {
    return (await this.read()).services;
  }
  async saveServices(services: string[]) {
    (await this.read()).services = [...services];
    await this.write();
  }
}

const sameAgent = (a: RegistryAgent, b: RegistryAgent) =>
  a.owner === b.owner && a.pricePerCall === b.pricePerCall && a.endpoint === b.endpoint && a.description === b.description && a.createdAt === b.createdAt;

/**
 * Follows the registry's events from a persisted cursor and keeps the current
 * set of services. Every touched service is confirmed with `get_agent` (the
 * chain is the truth); RPC errors never drop services, they are retried with backoff.
 *
 * @example
 * const mirror = createCatalogMirror({ registry, cursorStore: new FileCursorStore('.farebox/cursor.json') });
 * await mirror.start(); await mirror.ready();
 */
export function createCatalogMirror(opts: CatalogMirrorOptions): CatalogMirror {
  const { registry, cursorStore } = opts;
  const pollMs = opts.pollIntervalMs ?? 500;
  const maxBackoff = opts.maxBackoffMs ?? 30_000;
  const agents = new Map<string, RegistryAgent>();
  const skippedNames = new Set<string>();
  /** True when the name breaks the policy: it is dropped (and reported the first time). */
  function skipped(service: string): boolean {
    const reason = serviceNameProblem(service);
    if (reason === undefined) return false;
    if (!skippedNames.has(service)) {
      skippedNames.add(service);
      try {
        opts.onSkip?.({ service, shown: printable(service), reason });
      } catch {
        // A failing observer never stops the mirror.
      }
    }
    return true;
  }
  for (const agent of opts.initial ?? []) if (!skipped(agent.service)) agents.set(agent.service, agent);
  let loaded = false;
  let running = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<number> | undefined;
  let queued: Promise<number> | undefined;
  let failures = 0;
  let syncedLedger: number | null = null;
  let lastSyncAt: number | null = null;
  let lastError: string | null = null;
  let resolveReady!: () => void;
  const readyPromise = new Promise<void>((r) => (resolveReady = r));

  async function confirm(service: string): Promise<void> {
    // A name that breaks the policy is not even read (`get_agent`): it is never listed, and a name the RPC cannot take does not stall the sync.
    if (skipped(service)) {
      if (agents.delete(service)) opts.onChange?.({ type: 'remove', service });
      return;
    }
    const agent = await registry.getAgent(service);
    const before = agents.get(service);
    if (agent) {
      agents.set(service, agent);
      if (!before || !sameAgent(before, agent)) opts.onChange?.({ type: 'upsert', agent, service });
    } else if (before) {
      agents.delete(service);
      opts.onChange?.({ type: 'remove', service });
    }
  }

  async function persistServices(): Promise<void> {
    await cursorStore.saveServices?.([...agents.keys()]);
  }

  async function sync(): Promise<number> {
    if (!loaded) {
      for (const service of (await cursorStore.loadServices?.()) ?? []) await confirm(service);
      loaded = true;
    }
    let cursor = await cursorStore.load();
    let total = 0;
    let latest: number | null = null;
    for (;;) {
      const page = await registry.events(cursor ? { cursor, limit: 200 } : { limit: 200 });
      latest = page.latestLedger;
      // Confirm each touched service once, in first-seen order; only then move the cursor.
      const touched = [...new Set(page.events.map((e) => e.service))];
      for (const service of touched) await confirm(service);
      total += page.events.length;
      if (touched.length) await persistServices();
      if (page.cursor && page.cursor !== cursor) {
        cursor = page.cursor;
        await cursorStore.save(cursor);
      }
      if (page.events.length < 200) break;
    }
    failures = 0;
    if (latest !== null) syncedLedger = latest;
    lastSyncAt = (opts.now ?? Date.now)();
    lastError = null;
    resolveReady();
    return total;
  }

  function syncOnce(): Promise<number> {
    if (!inFlight) {
      inFlight = sync().finally(() => (inFlight = undefined));
      return inFlight;
    }
    // A sync that started earlier may have read its page before the caller's event: one more after it.
    queued ??= inFlight
      .catch(() => 0)
      .then(() => {
        queued = undefined;
        return syncOnce();
      });
    return queued;
  }

  function schedule(delay: number) {
    if (!running) return;
    timer = setTimeout(async () => {
      try {
        await syncOnce();
        schedule(pollMs);
      } catch (e) {
        failures++;
        lastError = e instanceof Error ? e.message : String(e);
        opts.onError?.(e);
        schedule(Math.min(maxBackoff, pollMs * 2 ** Math.min(failures, 10)));
      }
    }, delay);
    timer.unref?.();
  }

  return {
    async start() {
      if (running) return;
      running = true;
      schedule(0);
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      await inFlight?.catch(() => undefined);
    },
    syncOnce,
    status: () => ({ syncedLedger, lastSyncAt, failures, lastError, skipped: skippedNames.size }),
    async confirm(service: string) {
      await confirm(service);
      await persistServices();
      return agents.get(service);
    },
    list: () => [...agents.values()].sort((a, b) => a.service.localeCompare(b.service)),
    values: () => agents.values(),
    get: (service) => agents.get(service),
    ready: () => readyPromise,
  };
}
