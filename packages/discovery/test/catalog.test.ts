import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { attachToCatalog, createSearchIndex, type CatalogChange } from '@farebox/discovery';

interface Agent {
  service: string;
  description: string;
  pricePerCall: bigint;
}

/** A small in-memory registry with the catalog mirror's shape. */
class MemoryCatalog {
  private readonly agents = new Map<string, Agent>();
  private readonly events = new EventEmitter();
  list(): Agent[] {
    return [...this.agents.values()];
  }
  onChange(listener: (c: CatalogChange<Agent>) => void) {
    this.events.on('change', listener);
    return () => this.events.off('change', listener);
  }
  register(agent: Agent) {
    this.agents.set(agent.service, agent);
    this.events.emit('change', { type: 'upsert', service: agent.service, agent });
  }
  deregister(service: string) {
    this.agents.delete(service);
    this.events.emit('change', { type: 'remove', service });
  }
}

describe('attachToCatalog', () => {
  it('indexes the listing, then each registration, update and deregistration as it happens', async () => {
    const catalog = new MemoryCatalog();
    catalog.register({ service: 'skycast', description: 'weather forecasts', pricePerCall: 100_000n });
    const index = createSearchIndex();
    const attachment = attachToCatalog(index, catalog);
    await attachment.ready;
    expect((await index.search('weather')).map((h) => h.id)).toEqual(['skycast']);

    catalog.register({ service: 'lingua', description: 'translation between 40 languages', pricePerCall: 50_000n });
    const [hit] = await index.search('translation');
    expect(hit).toMatchObject({ id: 'lingua', meta: { pricePerCall: 50_000n } });

    catalog.register({ service: 'lingua', description: 'currency conversion', pricePerCall: 50_000n });
    expect(await index.search('translation')).toEqual([]);
    expect((await index.search('currency')).map((h) => h.id)).toEqual(['lingua']);

    catalog.deregister('skycast');
    expect(await index.search('weather')).toEqual([]);

    attachment.detach();
    catalog.register({ service: 'late', description: 'weather', pricePerCall: 1n });
    expect(await index.search('weather')).toEqual([]);
  });

  it('drops entries from a stale snapshot that the catalog no longer lists', async () => {
    const old = createSearchIndex();
    await old.upsert({ id: 'gone', name: 'gone', description: 'weather' });
    await old.upsert({ id: 'kept', name: 'kept', description: 'weather' });
    const index = createSearchIndex();
    await index.load(old.snapshot());
    const catalog = new MemoryCatalog();
    catalog.register({ service: 'kept', description: 'weather', pricePerCall: 1n });
    await attachToCatalog(index, catalog).ready;
    expect(index.ids()).toEqual(['kept']);
  });

  it('accepts changes through handle() for a source that takes its listener elsewhere', async () => {
    const agents: Agent[] = [];
    const index = createSearchIndex();
    const attachment = attachToCatalog(index, { list: () => agents });
    await attachment.ready;
    attachment.handle({ type: 'upsert', service: 'skycast', agent: { service: 'skycast', description: 'weather', pricePerCall: 1n } });
    expect((await index.search('weather')).map((h) => h.id)).toEqual(['skycast']);
    attachment.handle({ type: 'remove', service: 'skycast' });
    expect(index.size).toBe(0);
  });

  it('reports a bad entry to onError and keeps following the catalog', async () => {
    const errors: unknown[] = [];
    const catalog = new MemoryCatalog();
    const index = createSearchIndex();
    await attachToCatalog(index, catalog, { onError: (e) => errors.push(e) }).ready;
    catalog.register({ service: '', description: 'no name', pricePerCall: 1n });
    catalog.register({ service: 'ok', description: 'weather', pricePerCall: 1n });
    expect(errors).toHaveLength(1);
    expect(index.ids()).toEqual(['ok']);
  });
});
