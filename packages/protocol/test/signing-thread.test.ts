import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createEd25519Signer, signCallCertificate, verifyEd25519 } from '../src/index.js';
import { createThreadedEd25519Signer, type ThreadedEd25519Signer } from '../src/node/signing-thread.js';

const file = JSON.parse(readFileSync(new URL('./vectors/call-certificates.json', import.meta.url), 'utf8')) as {
  platformPublicKey: string;
  platformSecretSeed: string;
  vectors: Array<{ header: string; body: string; now: number }>;
};

const open: ThreadedEd25519Signer[] = [];
async function threaded(options?: { thread?: boolean }) {
  const s = await createThreadedEd25519Signer(file.platformSecretSeed, options);
  open.push(s);
  return s;
}
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

describe('Ed25519 signing on a worker thread', () => {
  it('makes the test vector certificate byte for byte', async () => {
    const signer = await threaded({ thread: true });
    expect(signer.threaded).toBe(true);
    expect(signer.publicKey).toBe(file.platformPublicKey);
    const good = file.vectors[0]!;
    const again = await signCallCertificate(
      { service: 'echo', body: good.body, amount: 100_000n, callId: 'call_0001', now: good.now, nonce: 'AAECAwQFBgcICQoLDA0ODw' },
      signer,
    );
    expect(again.header).toBe(good.header);
  });

  it('gives each of 300 concurrent messages its own signature', async () => {
    const signer = await threaded({ thread: true });
    const inline = await createEd25519Signer(file.platformSecretSeed);
    const messages = Array.from({ length: 300 }, (_, i) => new TextEncoder().encode(`message ${i}`));
    const signatures = await Promise.all(messages.map((m) => signer.sign(m)));
    for (const [i, m] of messages.entries()) {
      expect(Buffer.from(signatures[i]!)).toEqual(Buffer.from(await inline.sign(m)));
      expect(await verifyEd25519(signer.publicKey, m, signatures[i]!)).toBe(true);
    }
  });

  it('refuses to sign once closed, and fails what it still owed', async () => {
    const signer = await threaded({ thread: true });
    const owed = expect(signer.sign(new TextEncoder().encode('late'))).rejects.toThrow('signer closed');
    await signer.close();
    await owed;
    await expect(signer.sign(new TextEncoder().encode('after'))).rejects.toThrow('signer closed');
  });

  it('a message that cannot be sent to the thread is refused and leaves the signer working', async () => {
    const signer = await threaded({ thread: true });
    await expect(signer.sign({ f: () => 1 } as unknown as Uint8Array)).rejects.toThrow();
    expect(await verifyEd25519(signer.publicKey, new Uint8Array([1]), await signer.sign(new Uint8Array([1])))).toBe(true);
  });

  it('signs the bytes as they were when asked, though the caller changes them before the thread gets them', async () => {
    const signer = await threaded({ thread: true });
    const m = new TextEncoder().encode('asked');
    const signed = signer.sign(m);
    m.fill(0);
    expect(await verifyEd25519(signer.publicKey, new TextEncoder().encode('asked'), await signed)).toBe(true);
  });

  it('signs inline when asked not to use a thread', async () => {
    const signer = await threaded({ thread: false });
    expect(signer.threaded).toBe(false);
    const m = new TextEncoder().encode('inline');
    expect(await verifyEd25519(signer.publicKey, m, await signer.sign(m))).toBe(true);
  });

  it('a script awaiting one signature gets it, then exits on its own (the idle thread keeps nothing alive)', async () => {
    const built = fileURLToPath(new URL('../dist/node/signing-thread.js', import.meta.url));
    const script = `
      const { createThreadedEd25519Signer } = await import(${JSON.stringify(built)});
      const signer = await createThreadedEd25519Signer(${JSON.stringify(file.platformSecretSeed)}, { thread: true });
      const signature = await signer.sign(new TextEncoder().encode('once'));
      console.log(Buffer.from(signature).toString('hex'));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000 });
    const inline = await createEd25519Signer(file.platformSecretSeed);
    expect(stdout.trim()).toBe(Buffer.from(await inline.sign(new TextEncoder().encode('once'))).toString('hex'));
  });
});
