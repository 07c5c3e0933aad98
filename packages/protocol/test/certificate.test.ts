import { Keypair } from '@stellar/stellar-sdk';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  createCertificateSigner,
  decodeStrKey,
  encodeStrKey,
  isValidStrKey,
  CERTIFICATE_BATCH_MAX,
  signCallCertificate,
  signCallCertificateBatch,
  verifyCallCertificate,
  verifyEd25519,
  type Ed25519Signer,
} from '../src/index.js';
import { createHash } from 'node:crypto';

interface Vector {
  name: string;
  header: string;
  body: string;
  service: string;
  now: number;
  expect: { ok: boolean; reason?: string };
}
const file = JSON.parse(readFileSync(new URL('./vectors/call-certificates.json', import.meta.url), 'utf8')) as {
  platformPublicKey: string;
  platformSecretSeed: string;
  clockToleranceSeconds: number;
  vectors: Vector[];
};

describe('call certificate test vectors', () => {
  it.each(file.vectors.map((v) => [v.name, v] as const))('%s', async (_name, v) => {
    const verdict = await verifyCallCertificate(v.header, {
      body: v.body,
      service: v.service,
      platformPublicKey: file.platformPublicKey,
      now: v.now,
      clockToleranceSeconds: file.clockToleranceSeconds,
    });
    expect(verdict.ok).toBe(v.expect.ok);
    if (!verdict.ok) expect(verdict.reason).toBe(v.expect.reason);
  });

  it('covers every rejection reason', () => {
    const reasons = new Set(file.vectors.filter((v) => !v.expect.ok).map((v) => v.expect.reason));
    expect([...reasons].sort()).toEqual(['bad_signature', 'body_mismatch', 'expired', 'malformed', 'not_yet_valid', 'wrong_issuer', 'wrong_service']);
  });

  it('uses a platform key that the Stellar SDK derives identically', () => {
    expect(Keypair.fromSecret(file.platformSecretSeed).publicKey()).toBe(file.platformPublicKey);
  });
});

describe('signCallCertificate / verifyCallCertificate', () => {
  it('round-trips the claims and tells how long the nonce must be remembered', async () => {
    const kp = Keypair.random();
    const signer = await createCertificateSigner(kp.secret());
    expect(signer.publicKey).toBe(kp.publicKey());
    const body = new TextEncoder().encode('{"q":"ß → 東京"}');
    const { header, certificate } = await signCallCertificate({ service: 'translate', body, amount: 1234n, callId: 'c1', now: 1000 }, signer);
    const verdict = await verifyCallCertificate(header, { body, service: 'translate', platformPublicKey: kp.publicKey(), now: 1000 });
    expect(verdict).toEqual({ ok: true, certificate, acceptableUntil: 1000 + 60 + 120 });
    expect(certificate.amount).toBe(1234n);
    expect(certificate.issuer).toBe(kp.publicKey());
  });

  it('draws a fresh 128-bit nonce for every certificate', async () => {
    const signer = await createCertificateSigner(Keypair.random().secret());
    const nonces = new Set<string>();
    for (let i = 0; i < 200; i++) nonces.add((await signCallCertificate({ service: 's', body: '', amount: 1n, callId: `c${i}` }, signer)).certificate.nonce);
    expect(nonces.size).toBe(200);
    for (const n of nonces) expect(Buffer.from(n, 'base64url').length).toBe(16);
  });

  it('produces signatures the Stellar SDK verifies over the transmitted signing input', async () => {
    const kp = Keypair.random();
    const signer = await createCertificateSigner(kp.secret());
    const { header } = await signCallCertificate({ service: 's', body: 'x', amount: 5n, callId: 'c' }, signer);
    const [v, claims, sig] = header.split('.');
    expect(kp.verify(Buffer.from(`${v}.${claims}`), Buffer.from(sig!, 'base64url'))).toBe(true);
  });

  it('refuses lifetimes over 300 seconds when signing', async () => {
    const signer = await createCertificateSigner(Keypair.random().secret());
    await expect(signCallCertificate({ service: 's', body: '', amount: 1n, callId: 'c', ttlSeconds: 301 }, signer)).rejects.toThrow('ttlSeconds');
  });

  it('never throws on garbage input, it refuses it as malformed', async () => {
    const kp = Keypair.random();
    for (const header of [undefined, null, '...', 'v1..', 'v1.e30.', `v1.${'A'.repeat(5000)}.x`, 'v1.eyJ2IjoxfQ.AAAA']) {
      const verdict = await verifyCallCertificate(header as string, { body: '', service: 's', platformPublicKey: kp.publicKey() });
      expect(verdict).toMatchObject({ ok: false, reason: 'malformed' });
    }
  });
});

describe('signCallCertificateBatch (v2)', () => {
  const countingSigner = (signer: Ed25519Signer) => {
    const counted = {
      signatures: 0,
      publicKey: signer.publicKey,
      sign: (m: Uint8Array) => {
        counted.signatures++;
        return signer.sign(m);
      },
    };
    return counted;
  };

  it.each([1, 2, 3, 5, 8, 13, 64, CERTIFICATE_BATCH_MAX])('signs %i certificates with one signature, each verifying alone against its own body', async (n) => {
    const kp = Keypair.random();
    const signer = countingSigner(await createCertificateSigner(kp.secret()));
    const bodies = Array.from({ length: n }, (_, i) => `{"i":${i}}`);
    const signed = await signCallCertificateBatch(
      bodies.map((body, i) => ({ service: 'svc', body, amount: BigInt(i + 1), callId: `c${i}`, now: 1000 })),
      signer,
    );
    expect(signer.signatures).toBe(1);
    expect(new Set(signed.map((c) => c.header.split('.')[3])).size).toBe(1);
    for (const [i, c] of signed.entries()) {
      expect(c.header.startsWith('v2.')).toBe(true);
      expect(c.certificate).toMatchObject({ version: 2, callId: `c${i}`, amount: BigInt(i + 1) });
      const verdict = await verifyCallCertificate(c.header, { body: bodies[i]!, service: 'svc', platformPublicKey: kp.publicKey(), now: 1000 });
      expect(verdict).toEqual({ ok: true, certificate: c.certificate, acceptableUntil: 1000 + 60 + 120 });
      // Another certificate's body never passes under this one's claims.
      if (n > 1)
        expect(
          await verifyCallCertificate(c.header, { body: bodies[(i + 1) % n]!, service: 'svc', platformPublicKey: kp.publicKey(), now: 1000 }),
        ).toMatchObject({ ok: false, reason: 'body_mismatch' });
    }
  });

  it('signs a root that an independent Merkle fold and the Stellar SDK verify', async () => {
    const kp = Keypair.random();
    const signer = await createCertificateSigner(kp.secret());
    const signed = await signCallCertificateBatch(
      Array.from({ length: 7 }, (_, i) => ({ service: 's', body: String(i), amount: 1n, callId: `c${i}` })),
      signer,
    );
    const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
    for (const { header } of signed) {
      const [v, claims, proof, sig] = header.split('.') as [string, string, string, string];
      let node = sha(Buffer.from([0]), Buffer.from(`${v}.${claims}`));
      const steps = Buffer.from(proof, 'base64url');
      // 7 leaves: 3 levels, and leaf 6 goes up one level alone.
      expect(steps.length / 33).toBeLessThanOrEqual(3);
      for (let o = 0; o < steps.length; o += 33) {
        const sibling = steps.subarray(o + 1, o + 33);
        node = steps[o] === 0 ? sha(Buffer.from([1]), sibling, node) : sha(Buffer.from([1]), node, sibling);
      }
      expect(kp.verify(Buffer.from(`v2.root.${node.toString('base64url')}`), Buffer.from(sig, 'base64url'))).toBe(true);
    }
  });

  it('refuses more than CERTIFICATE_BATCH_MAX certificates and answers nothing for none', async () => {
    const signer = await createCertificateSigner(Keypair.random().secret());
    const one = { service: 's', body: '', amount: 1n, callId: 'c' };
    await expect(
      signCallCertificateBatch(
        Array.from({ length: CERTIFICATE_BATCH_MAX + 1 }, () => one),
        signer,
      ),
    ).rejects.toThrow(`at most ${CERTIFICATE_BATCH_MAX}`);
    expect(await signCallCertificateBatch([], signer)).toEqual([]);
  });
});

describe('StrKey', () => {
  it('matches the Stellar SDK for public keys and seeds', () => {
    for (let i = 0; i < 20; i++) {
      const kp = Keypair.random();
      expect(encodeStrKey('publicKey', decodeStrKey('publicKey', kp.publicKey()))).toBe(kp.publicKey());
      expect(encodeStrKey('publicKey', new Uint8Array(kp.rawPublicKey()))).toBe(kp.publicKey());
      expect(encodeStrKey('secretSeed', new Uint8Array(kp.rawSecretKey()))).toBe(kp.secret());
    }
  });

  it('rejects a key with a broken checksum or the wrong kind', () => {
    const g = Keypair.random().publicKey();
    const broken = g.slice(0, -1) + (g.endsWith('A') ? 'B' : 'A');
    expect(isValidStrKey('publicKey', broken)).toBe(false);
    expect(isValidStrKey('secretSeed', g)).toBe(false);
    expect(isValidStrKey('publicKey', g.toLowerCase())).toBe(false);
  });

  it('verifyEd25519 returns false for an invalid key instead of throwing', async () => {
    expect(await verifyEd25519('GNOTAKEY', new Uint8Array(1), new Uint8Array(64))).toBe(false);
  });
});
