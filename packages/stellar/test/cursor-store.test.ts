import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileCursorStore } from '@farebox/stellar';

describe('FileCursorStore', () => {
  it('survives saves that overlap (a confirmation and a sync at once) and keeps the last state, owner-only', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'farebox-cursor-')), 'catalog.json');
    const store = new FileCursorStore(path);
    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? store.save(`cursor-${i}`) : store.saveServices([`svc-${i}`]))));
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ cursor: 'cursor-39', services: ['svc-38'] });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const again = new FileCursorStore(path);
    expect(await again.load()).toBe('cursor-39');
    expect(await again.loadServices()).toEqual(['svc-38']);
  });
});
