import { Keypair } from '@stellar/stellar-sdk';
import { createCertificateSigner, verifyCallCertificate, type Ed25519Signer } from '@farebox/protocol';
import { describe, expect, it } from 'vitest';
import { createCertificateIssuer } from '../src/certificates.js';

const ENDPOINT = 'https://svc.example/';
const input = (i: number) => ({ service: 'svc', body: `{"i":${i}}`, amount: 100n, callId: `call_${i}` });

async function signer(): Promise<Ed25519Signer & { signatures: number }> {
  const kp = Keypair.random();
  const inner = await createCertificateSigner(kp.secret());
  const counted = {
    publicKey: inner.publicKey,
    signatures: 0,
    sign: (m: Uint8Array) => {
      counted.signatures++;
      return inner.sign(m);
    },
  };
  return counted;
}

describe('certificate issuer', () => {
  it('signs v1 for a service that has not said it verifies v2, each certificate alone', async () => {
    const s = await signer();
    const issuer = createCertificateIssuer(s);
    const headers = await Promise.all([0, 1, 2].map((i) => issuer.issue(ENDPOINT, input(i))));
    expect(headers.every((h) => h.startsWith('v1.'))).toBe(true);
    expect(s.signatures).toBe(3);
  });

  it('signs the certificates of one turn under one signature once the service says v2, each verifying alone', async () => {
    const s = await signer();
    const issuer = createCertificateIssuer(s);
    expect(issuer.noteAnswer(ENDPOINT, { 'farebox-certificate-versions': 'v1, v2' })).toBe(true);
    const headers = await Promise.all([0, 1, 2, 3, 4].map((i) => issuer.issue(ENDPOINT, input(i))));
    expect(s.signatures).toBe(1);
    for (const [i, header] of headers.entries()) {
      expect(issuer.isBatchSigned(header)).toBe(true);
      const verdict = await verifyCallCertificate(header, { body: input(i).body, service: 'svc', platformPublicKey: s.publicKey });
      expect(verdict).toMatchObject({ ok: true, certificate: { version: 2, callId: `call_${i}` } });
    }
    // Another turn, another signature; another endpoint that said nothing still gets v1.
    const [later, other] = await Promise.all([issuer.issue(ENDPOINT, input(5)), issuer.issue('https://other.example/', input(6))]);
    expect(later!.startsWith('v2.')).toBe(true);
    expect(other!.startsWith('v1.')).toBe(true);
    expect(s.signatures).toBe(3);
  });

  it('reads the versions header as a list of tokens, and goes back to v1 when an answer stops naming v2', async () => {
    const issuer = createCertificateIssuer(await signer());
    expect(issuer.noteAnswer(ENDPOINT, { 'farebox-certificate-versions': 'v12' })).toBe(false);
    expect(issuer.noteAnswer(ENDPOINT, { 'farebox-certificate-versions': 'v1,V2 ' })).toBe(true);
    expect(issuer.noteAnswer(ENDPOINT, { 'farebox-certificate-versions': ['v1', 'v2'] })).toBe(true);
    expect((await issuer.issue(ENDPOINT, input(0))).startsWith('v2.')).toBe(true);
    expect(issuer.noteAnswer(ENDPOINT, {})).toBe(false);
    expect((await issuer.issue(ENDPOINT, input(1))).startsWith('v1.')).toBe(true);
  });

  it('fails every certificate of a batch whose signature failed, and signs the next batch', async () => {
    const s = await signer();
    let fail = true;
    const flaky: Ed25519Signer = { publicKey: s.publicKey, sign: (m) => (fail ? Promise.reject(new Error('signing thread exited (1)')) : s.sign(m)) };
    const issuer = createCertificateIssuer(flaky);
    issuer.noteAnswer(ENDPOINT, { 'farebox-certificate-versions': 'v1, v2' });
    const failed = await Promise.allSettled([0, 1].map((i) => issuer.issue(ENDPOINT, input(i))));
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((failed[0] as PromiseRejectedResult).reason.message).toBe('signing thread exited (1)');
    fail = false;
    expect((await issuer.issue(ENDPOINT, input(2))).startsWith('v2.')).toBe(true);
  });
});
