import { mkdtemp, readFile, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileServedEscrowStore, MemoryServedEscrowStore, ProviderError, type ServedEscrowRecord, type ServedEscrowStore } from '../src/index.js';

const record = (escrowId: string): ServedEscrowRecord => ({
  escrowId,
  service: 'echo',
  quoteId: 'q_x.y',
  amount: '5000000',
  payer: 'unknown',
  status: 'serving',
  claimedAt: 1,
  updatedAt: 1,
});

async function tempFile() {
  const dir = await mkdtemp(join(tmpdir(), 'farebox-served-'));
  return { dir, path: join(dir, 'nested', 'served-escrows.json') };
}

const stores: Array<[string, () => Promise<ServedEscrowStore>]> = [
  ['memory', async () => new MemoryServedEscrowStore()],
  ['file', async () => new FileServedEscrowStore((await tempFile()).path)],
];

describe.each(stores)('%s served-escrow store', (_name, make) => {
  it('lets exactly one of many concurrent claims of the same escrow win', async () => {
    const store = await make();
    const results = await Promise.all(Array.from({ length: 20 }, () => store.claim(record('CESCROW1'))));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.list()).toHaveLength(1);
  });

  it('keeps a claimed escrow claimed whatever its status', async () => {
    const store = await make();
    await store.claim(record('CESCROW2'));
    await store.update('CESCROW2', { status: 'abandoned', reason: 'handler failed' });
    expect(await store.claim(record('CESCROW2'))).toBe(false);
    expect(await store.get('CESCROW2')).toMatchObject({ status: 'abandoned', reason: 'handler failed' });
  });

  it('refuses to update an escrow that was never claimed', async () => {
    const store = await make();
    await expect(store.update('CNEVER', { status: 'released' })).rejects.toThrow(/never claimed/);
  });
});

describe('FileServedEscrowStore', () => {
  it('remembers claims after a restart (a new instance on the same file)', async () => {
    const { path } = await tempFile();
    const first = new FileServedEscrowStore(path);
    await first.claim(record('CA'));
    await first.update('CA', { status: 'released', releaseTx: 'abc' });
    await first.claim(record('CB'));

    const second = new FileServedEscrowStore(path);
    expect(await second.claim(record('CA'))).toBe(false);
    expect(await second.claim(record('CB'))).toBe(false);
    expect(await second.claim(record('CC'))).toBe(true);
    expect(await second.get('CA')).toMatchObject({ status: 'released', releaseTx: 'abc' });
  });

  it('leaves no temporary file behind and writes only the final JSON', async () => {
    const { path } = await tempFile();
    const store = new FileServedEscrowStore(path);
    await Promise.all(['C1', 'C2', 'C3'].map((id) => store.claim(record(id))));
    const files = await readdir(join(path, '..'));
    expect(files).toEqual(['served-escrows.json']);
    const json = JSON.parse(await readFile(path, 'utf8')) as { version: number; escrows: Record<string, unknown> };
    expect(json.version).toBe(1);
    expect(Object.keys(json.escrows).sort()).toEqual(['C1', 'C2', 'C3']);
  });

  it('refuses to work on a corrupt file instead of starting empty (which could serve escrows twice)', async () => {
    const { dir } = await tempFile();
    const path = join(dir, 'served.json');
    await writeFile(path, '{"version":1,"escrows":{"CA":{"escrowId":"CA"');
    const store = new FileServedEscrowStore(path);
    const err = await store.claim(record('CA')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).code).toBe('ESCROW_STORE');
    expect((err as Error).message).toMatch(/corrupt/);
    expect(await readFile(path, 'utf8')).toBe('{"version":1,"escrows":{"CA":{"escrowId":"CA"');
  });
});
