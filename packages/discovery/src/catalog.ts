import type { SearchIndex } from './search-types.js';

/** The fields discovery needs from a registry entry (structurally, any catalog's agent). */
export interface CatalogAgentLike {
  service: string;
  description: string;
}

export interface CatalogChange<A extends CatalogAgentLike = CatalogAgentLike> {
  type: 'upsert' | 'remove';
  service: string;
  agent?: A;
}

/**
 * Anything that lists registry entries and, optionally, lets one subscribe to
 * changes. A source without `onChange` (such as the @farebox/stellar catalog
 * mirror, which takes its listener as a construction option) feeds changes
 * through the attachment's `handle`.
 */
export interface CatalogSource<A extends CatalogAgentLike = CatalogAgentLike> {
  list(): Iterable<A> | Promise<Iterable<A>>;
  onChange?(listener: (change: CatalogChange<A>) => void): (() => void) | { unsubscribe(): void } | void;
}

export interface CatalogAttachment<A extends CatalogAgentLike = CatalogAgentLike> {
  /** Applies one change (pass this as the catalog's change listener). */
  handle(change: CatalogChange<A>): void;
  /** Resolves once the initial listing is indexed (keyword side) and reconciled. */
  readonly ready: Promise<void>;
  /** Stops following the catalog. */
  detach(): void;
  /** Resolves once every vector queued so far is stored. */
  idle(): Promise<void>;
}

/**
 * Keeps `index` in step with a catalog: indexes the current listing, then
 * every change as it arrives. A registration is keyword-searchable the moment
 * its change event is delivered and vector-searchable once embedded; only
 * entries whose name or description changed are re-embedded. Entries the index
 * holds (say, from a snapshot) that the listing no longer has are removed.
 * The entry object itself becomes the hit's `meta`.
 *
 * @example
 * // with the @farebox/stellar catalog mirror (its listener is an option):
 * let attachment: CatalogAttachment<RegistryAgent> | undefined;
 * const mirror = createCatalogMirror({ registry, cursorStore, onChange: (c) => attachment?.handle(c) });
 * await mirror.start(); await mirror.ready();
 * attachment = attachToCatalog(index, mirror);
 */
export function attachToCatalog<A extends CatalogAgentLike>(
  index: SearchIndex,
  source: CatalogSource<A>,
  options: { onError?: (err: unknown, change?: CatalogChange<A>) => void } = {},
): CatalogAttachment<A> {
  const changedDuringListing = new Set<string>();
  let listing = true;
  let detached = false;
  const embeds: Promise<void>[] = [];
  const report = options.onError ?? (() => undefined);

  const apply = (change: CatalogChange<A>): void => {
    try {
      if (change.type === 'remove') {
        index.remove(change.service);
      } else if (change.agent) {
        embeds.push(index.upsert(toDoc(change.agent)));
      } else {
        report(new Error(`upsert of ${change.service} carried no entry`), change);
      }
    } catch (err) {
      report(err, change);
    }
  };

  const handle = (change: CatalogChange<A>): void => {
    if (detached) return;
    if (listing) changedDuringListing.add(change.service);
    apply(change);
  };
  const sub = source.onChange?.(handle);

  const ready = (async () => {
    const listed = new Set<string>();
    for (const agent of await source.list()) {
      listed.add(agent.service);
      if (changedDuringListing.has(agent.service)) continue;
      try {
        embeds.push(index.upsert(toDoc(agent)));
      } catch (err) {
        report(err);
      }
    }
    for (const id of index.ids()) {
      if (!listed.has(id) && !changedDuringListing.has(id)) index.remove(id);
    }
    listing = false;
    changedDuringListing.clear();
  })();

  return {
    ready,
    handle,
    detach() {
      detached = true;
      if (typeof sub === 'function') sub();
      else if (sub && typeof sub.unsubscribe === 'function') sub.unsubscribe();
    },
    async idle() {
      await ready;
      await Promise.all(embeds.splice(0));
      await index.idle();
    },
  };
}

function toDoc(agent: CatalogAgentLike) {
  return { id: agent.service, name: agent.service, description: agent.description, meta: agent };
}
