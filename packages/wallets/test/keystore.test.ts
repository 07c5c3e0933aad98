import { Account, Asset, Keypair, Networks, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { mkdtemp, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyEd25519 } from '@farebox/protocol';
import { createLocalKeystore, walletSigner } from '../src/index.js';

const PASSPHRASE = Networks.TESTNET;

function unsignedPayment(source: string) {
  return new TransactionBuilder(new Account(source, '100'), { fee: '100', networkPassphrase: PASSPHRASE })
    .addOperation(Operation.payment({ destination: Keypair.random().publicKey(), asset: Asset.native(), amount: '1' }))
    .setTimeout(300)
    .build()
    .toXDR();
}

describe('local keystore', () => {
  it('creates one wallet per ref and signs transactions that verify under its address', async () => {
    const ks = await createLocalKeystore();
    const address = await ks.create('account:1');
    expect(await ks.create('account:1')).toBe(address);
    expect(await ks.publicKey('account:1')).toBe(address);
    expect(await ks.create('account:2')).not.toBe(address);

    const signed = TransactionBuilder.fromXDR(await ks.sign(address, unsignedPayment(address), PASSPHRASE), PASSPHRASE);
    expect(signed.signatures).toHaveLength(1);
    expect(Keypair.fromPublicKey(address).verify(signed.hash(), signed.signatures[0]!.signature())).toBe(true);
  });

  it('never exposes a secret through its API', async () => {
    const ks = await createLocalKeystore();
    const kp = Keypair.random();
    await ks.import('platform:treasury', kp.secret());
    const values = JSON.stringify([Object.keys(ks), await ks.publicKey('platform:treasury'), await ks.signer('platform:treasury')]);
    expect(values).not.toContain(kp.secret());
    expect(values).not.toContain(Buffer.from(kp.rawSecretKey()).toString('base64'));
  });

  it('encrypts secrets at rest and keeps its generated key file at mode 0600', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-ks-'));
    const ks = await createLocalKeystore({ dir, env: {} });
    const kp = Keypair.random();
    await ks.import('acct', kp.secret());
    expect((await stat(join(dir, 'keystore.key'))).mode & 0o777).toBe(0o600);
    for (const f of await readdir(join(dir, 'wallets'))) {
      const text = await readFile(join(dir, 'wallets', f), 'utf8');
      expect(text).not.toContain(kp.secret());
      expect(text).not.toContain(Buffer.from(kp.rawSecretKey()).toString('base64'));
      expect((await stat(join(dir, 'wallets', f))).mode & 0o777).toBe(0o600);
    }
    const reopened = await createLocalKeystore({ dir, env: {} });
    expect(await reopened.publicKey('acct')).toBe(kp.publicKey());
    await expect(reopened.sign(kp.publicKey(), unsignedPayment(kp.publicKey()), PASSPHRASE)).resolves.toBeTypeOf('string');
  });

  it('refuses to decrypt with the wrong key or a tampered record', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-ks-'));
    const ks = await createLocalKeystore({ dir, key: Buffer.alloc(32, 1) });
    const address = await ks.create('acct');
    const wrong = await createLocalKeystore({ dir, key: Buffer.alloc(32, 2) });
    await expect(wrong.sign(address, unsignedPayment(address), PASSPHRASE)).rejects.toMatchObject({ code: 'DECRYPT_FAILED' });

    const [file] = await readdir(join(dir, 'wallets'));
    const path = join(dir, 'wallets', file!);
    const rec = JSON.parse(await readFile(path, 'utf8'));
    rec.address = Keypair.random().publicKey();
    await writeFile(path, JSON.stringify(rec));
    await expect(ks.ed25519Signer('acct')).rejects.toMatchObject({ code: 'DECRYPT_FAILED' });
  });

  it('takes its key from FAREBOX_KEYSTORE_KEY and refuses a malformed one', async () => {
    const env = { FAREBOX_KEYSTORE_KEY: Buffer.alloc(32, 5).toString('hex') };
    const dir = await mkdtemp(join(tmpdir(), 'farebox-ks-'));
    const a = await createLocalKeystore({ dir, env });
    const address = await a.create('x');
    const b = await createLocalKeystore({ dir, env });
    await expect(b.sign(address, unsignedPayment(address), PASSPHRASE)).resolves.toBeTypeOf('string');
    await expect(createLocalKeystore({ env: { FAREBOX_KEYSTORE_KEY: 'short' } })).rejects.toMatchObject({ code: 'BAD_KEY' });
  });

  it('agrees on one wallet when two keystores create the same ref at once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-ks-'));
    const key = Buffer.alloc(32, 3);
    const [a, b] = await Promise.all([createLocalKeystore({ dir, key }), createLocalKeystore({ dir, key })]);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).create('shared')));
    expect(new Set(results).size).toBe(1);
  });

  it('keeps the certificate key and the treasury key distinct, and the certificate signer verifies', async () => {
    const ks = await createLocalKeystore();
    await ks.create('platform:certificate');
    const cert = await ks.ed25519Signer('platform:certificate');
    const treasury = await ks.create('platform:treasury');
    expect(cert.publicKey).not.toBe(treasury);
    const msg = new TextEncoder().encode('hello');
    expect(await verifyEd25519(cert.publicKey, msg, await cert.sign(msg))).toBe(true);
  });

  it('refuses to sign for an unknown address or a non-transaction', async () => {
    const ks = await createLocalKeystore();
    const address = await ks.create('a');
    await expect(ks.sign(Keypair.random().publicKey(), unsignedPayment(address), PASSPHRASE)).rejects.toMatchObject({ code: 'UNKNOWN_WALLET' });
    await expect(ks.sign(address, 'AAAA', PASSPHRASE)).rejects.toMatchObject({ code: 'BAD_TRANSACTION' });
    const signer = walletSigner(ks, address);
    expect(signer.publicKey).toBe(address);
  });

  it('seals a secret the host signs with again: it opens with the same key and context only, and is not in the sealed text', async () => {
    const ks = await createLocalKeystore({ key: Buffer.alloc(32, 7) });
    const secret = 'whsec_Q2hhbmdlIG1lIGJlZm9yZSBwcm9kdWN0aW9u';
    const sealed = ks.sealSecret('webhook:whk_1', secret);
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toBe(ks.sealSecret('webhook:whk_1', secret));
    expect(ks.openSecret('webhook:whk_1', sealed)).toBe(secret);
    const again = await createLocalKeystore({ key: Buffer.alloc(32, 7) });
    expect(again.openSecret('webhook:whk_1', sealed)).toBe(secret);
    const other = await createLocalKeystore({ key: Buffer.alloc(32, 8) });
    expect(() => other.openSecret('webhook:whk_1', sealed)).toThrow('cannot open the sealed secret of webhook:whk_1: wrong keystore key or tampered record');
    expect(() => ks.openSecret('webhook:whk_2', sealed)).toThrow(/cannot open the sealed secret of webhook:whk_2/);
    const parts = sealed.split('.');
    parts[3] = (parts[3]!.startsWith('A') ? 'B' : 'A') + parts[3]!.slice(1);
    expect(() => ks.openSecret('webhook:whk_1', parts.join('.'))).toThrow(/tampered/);
  });
});
