// Regenerates call-certificates.json: `pnpm exec tsx packages/protocol/test/vectors/generate.ts`.
// Ed25519 is deterministic and every input here is fixed, so the output is
// byte-identical on every run; the committed file is the reference other
// implementations check against.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createCertificateSigner, encodeStrKey, signCallCertificate, signCallCertificateBatch } from '../../src/index.js';

const seed = (label: string) => encodeStrKey('secretSeed', new Uint8Array(createHash('sha256').update(label).digest()));
const PLATFORM_SECRET = seed('farebox test vectors: platform key');
const OTHER_SECRET = seed('farebox test vectors: some other key');
const NOW = 1_800_000_000;
const NONCE = 'AAECAwQFBgcICQoLDA0ODw';
const BODY = '{"text":"hello, world"}';

async function main() {
  const platform = await createCertificateSigner(PLATFORM_SECRET);
  const other = await createCertificateSigner(OTHER_SECRET);
  const base = { service: 'echo', body: BODY, amount: 100_000n, callId: 'call_0001', now: NOW, nonce: NONCE };
  const good = (await signCallCertificate(base, platform)).header;
  const [v, claims, sig] = good.split('.') as [string, string, string];
  const flipped = sig.slice(0, -2) + (sig.at(-2) === 'A' ? 'B' : 'A') + sig.at(-1);
  const vectors = [
    { name: 'valid certificate', header: good, body: BODY, service: 'echo', now: NOW, expect: { ok: true } },
    { name: 'valid at the edge of the clock tolerance after expiry', header: good, body: BODY, service: 'echo', now: NOW + 60 + 120, expect: { ok: true } },
    { name: 'expired beyond the tolerance', header: good, body: BODY, service: 'echo', now: NOW + 60 + 121, expect: { ok: false, reason: 'expired' } },
    {
      name: 'issued in the future beyond the tolerance',
      header: good,
      body: BODY,
      service: 'echo',
      now: NOW - 121,
      expect: { ok: false, reason: 'not_yet_valid' },
    },
    { name: 'issued in the future within the tolerance', header: good, body: BODY, service: 'echo', now: NOW - 120, expect: { ok: true } },
    { name: 'made for another service', header: good, body: BODY, service: 'echo2', now: NOW, expect: { ok: false, reason: 'wrong_service' } },
    {
      name: 'body changed by one byte',
      header: good,
      body: BODY.replace('hello', 'hellp'),
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'body_mismatch' },
    },
    {
      name: 'body re-serialised with a space',
      header: good,
      body: BODY.replace(':', ': '),
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'body_mismatch' },
    },
    {
      name: 'signed by another key',
      header: (await signCallCertificate(base, other)).header,
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'wrong_issuer' },
    },
    { name: 'signature altered', header: `${v}.${claims}.${flipped}`, body: BODY, service: 'echo', now: NOW, expect: { ok: false, reason: 'bad_signature' } },
    {
      name: 'claims from another certificate under this signature',
      header: `${v}.${(await signCallCertificate({ ...base, amount: 900_000n }, platform)).header.split('.')[1]}.${sig}`,
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'bad_signature' },
    },
    { name: 'wrong version prefix', header: `v2.${claims}.${sig}`, body: BODY, service: 'echo', now: NOW, expect: { ok: false, reason: 'malformed' } },
    { name: 'missing signature', header: `${v}.${claims}`, body: BODY, service: 'echo', now: NOW, expect: { ok: false, reason: 'malformed' } },
    { name: 'not base64url', header: 'v1.!!!.@@@', body: BODY, service: 'echo', now: NOW, expect: { ok: false, reason: 'malformed' } },
    { name: 'empty header', header: '', body: BODY, service: 'echo', now: NOW, expect: { ok: false, reason: 'malformed' } },
    {
      name: 'nonce shorter than 128 bits',
      header: (await signCallCertificate({ ...base, nonce: 'AAECAwQFBgcICQoLDA0O' }, platform)).header,
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'malformed' },
    },
    {
      name: 'empty body signed and sent',
      header: (await signCallCertificate({ ...base, body: '' }, platform)).header,
      body: '',
      service: 'echo',
      now: NOW,
      expect: { ok: true },
    },
  ];
  // Version 2: three certificates under one signature (the third leaf goes up a level unchanged), and a batch of one.
  const batch = (
    await signCallCertificateBatch(
      [base, { ...base, body: '{"text":"second"}', callId: 'call_0002' }, { ...base, body: '{"text":"third"}', callId: 'call_0003' }],
      platform,
    )
  ).map((c) => c.header);
  const [b0, b1, b2] = batch as [string, string, string];
  const [, claims0, proof0, sig0] = b0.split('.') as [string, string, string, string];
  const [, , proof1] = b1.split('.') as [string, string, string, string];
  const proofBytes = Buffer.from(proof0, 'base64url');
  const withProof = (bytes: Uint8Array) => `v2.${claims0}.${Buffer.from(bytes).toString('base64url')}.${sig0}`;
  const sideFlipped = Uint8Array.from(proofBytes);
  sideFlipped[0] = sideFlipped[0] === 0 ? 1 : 0;
  const sideInvalid = Uint8Array.from(proofBytes);
  sideInvalid[0] = 2;
  const siblingAltered = Uint8Array.from(proofBytes);
  siblingAltered[1] = siblingAltered[1]! ^ 1;
  const [single] = (await signCallCertificateBatch([base], platform)).map((c) => c.header) as [string];
  vectors.push(
    { name: 'v2: first of three under one signature', header: b0, body: BODY, service: 'echo', now: NOW, expect: { ok: true } },
    { name: 'v2: second of three under one signature', header: b1, body: '{"text":"second"}', service: 'echo', now: NOW, expect: { ok: true } },
    { name: 'v2: third of three (one proof step)', header: b2, body: '{"text":"third"}', service: 'echo', now: NOW, expect: { ok: true } },
    { name: 'v2: a batch of one (empty proof)', header: single, body: BODY, service: 'echo', now: NOW, expect: { ok: true } },
    {
      name: 'v2: the body of another certificate of the batch',
      header: b0,
      body: '{"text":"second"}',
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'body_mismatch' },
    },
    {
      name: 'v2: claims with the proof of another leaf',
      header: `v2.${claims0}.${proof1}.${sig0}`,
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'bad_signature' },
    },
    {
      name: 'v2: a sibling hash altered',
      header: withProof(siblingAltered),
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'bad_signature' },
    },
    {
      name: 'v2: a sibling put on the other side',
      header: withProof(sideFlipped),
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'bad_signature' },
    },
    {
      name: 'v2: a proof step that is neither left nor right',
      header: withProof(sideInvalid),
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'malformed' },
    },
    {
      name: 'v2: a proof cut inside a step',
      header: withProof(proofBytes.subarray(0, 40)),
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'malformed' },
    },
    {
      name: 'v2: a proof of 17 steps',
      header: withProof(new Uint8Array(17 * 33)),
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'malformed' },
    },
    { name: 'v2: the proof left out', header: `v2.${claims0}.${sig0}`, body: BODY, service: 'echo', now: NOW, expect: { ok: false, reason: 'malformed' } },
    {
      name: 'v2: version 1 claims in a v2 header',
      header: `v2.${claims}..${sig0}`,
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'malformed' },
    },
    {
      name: 'v2: the root signature as a v1 signature',
      header: `v1.${claims0}.${sig0}`,
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'malformed' },
    },
    {
      name: 'v2: a v1 certificate with an empty proof',
      header: `v2.${claims}..${sig}`,
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'malformed' },
    },
    {
      name: 'v2: signed by another key',
      header: (await signCallCertificateBatch([base], other))[0]!.header,
      body: BODY,
      service: 'echo',
      now: NOW,
      expect: { ok: false, reason: 'wrong_issuer' },
    },
  );
  const file = {
    description:
      'Farebox call-certificate test vectors. Verify each `header` against `body` (UTF-8), `service`, `platformPublicKey` and `now` (Unix seconds) with a clock tolerance of 120 s; `expect` is the verdict and, when refused, the reason.',
    platformPublicKey: platform.publicKey,
    platformSecretSeed: PLATFORM_SECRET,
    clockToleranceSeconds: 120,
    vectors,
  };
  writeFileSync(new URL('./call-certificates.json', import.meta.url), `${JSON.stringify(file, null, 2)}\n`);
}

await main();
