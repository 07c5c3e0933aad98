import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { devnetPassphraseFor } from '../src/commands/dev.js';

// `farebox dev` outside a checkout (the gateway binary): its devnet stands in for testnet, as `npm start`'s does,
// unless the data folder already holds a devnet made under the local passphrase or the variable says otherwise.
describe("farebox dev's devnet passphrase", () => {
  const local = { passphrase: undefined, local: true };

  it('is testnet for a fresh data folder, local for one whose devnet was made under the local passphrase, and what the variable says', async () => {
    const fresh = await mkdtemp(join(tmpdir(), 'farebox-dev-'));
    expect(devnetPassphraseFor(local, fresh)).toBe('testnet');

    const old = await mkdtemp(join(tmpdir(), 'farebox-dev-'));
    await mkdir(join(old, 'devnet'));
    // Devnets before the passphrase option wrote no passphrase: theirs was the local one.
    await writeFile(join(old, 'devnet', 'state.json'), JSON.stringify({ version: 1, latest: {} }));
    expect(devnetPassphraseFor(local, old)).toBe('local');

    const made = await mkdtemp(join(tmpdir(), 'farebox-dev-'));
    await mkdir(join(made, 'devnet'));
    await writeFile(join(made, 'devnet', 'state.json'), JSON.stringify({ version: 1, passphrase: 'Test SDF Network ; September 2015' }));
    expect(devnetPassphraseFor(local, made)).toBe('testnet');

    expect(devnetPassphraseFor({ passphrase: 'local', local: true }, fresh)).toBe('local');
    expect(devnetPassphraseFor({ passphrase: undefined, local: false }, fresh)).toBeUndefined();
  });
});
