import { Keypair } from '@stellar/stellar-sdk';
import { splitFee } from '@farebox/protocol';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dropTestSchema } from './harness.js';
import { startStack, type Stack } from './settlement-kit.js';

// Publisher links on PostgreSQL (schema 16): linking, linking again (idempotent, then moved to another account),
// and the linked key's calls in the overview; its settle-now pays the key.
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `gw_links_${process.pid}_${Date.now()}`;
let s: Stack;
beforeAll(async () => {
  s = await startStack({ gateway: { databaseUrl, databaseSchema: schema, settlement: { settlementInterval: '1h', fundingInterval: '1h' } } });
}, 120_000);
afterAll(async () => {
  await s?.close();
  await dropTestSchema(schema, databaseUrl);
});

const sign = (secret: string, text: string) => Keypair.fromSecret(secret).sign(Buffer.from(text, 'utf8')).toString('base64');

it('links a key to one account at a time, and the account that holds it sees and settles its earnings', async () => {
  const name = `pg-link-${process.pid % 100000}`;
  const svc = await s.publish(name, '0.002');
  const caller = await s.user({ topup: 5 });
  for (let i = 0; i < 3; i++) expect((await caller.api('/v1/call', { body: { service: name, payload: { i } } })).status).toBe(200);
  const [first, second] = [await s.user(), await s.user()];
  for (const u of [first, second]) expect((await u.api('/v1/publisher/activate', { body: { name: 'PG' } })).status).toBe(200);
  const link = async (u: typeof first) => {
    const { body: ch } = await u.api('/v1/publisher/links/challenge', { body: { owner: svc.owner } });
    return u.api('/v1/publisher/links', { body: { owner: svc.owner, challenge: ch.challenge, signature: sign(svc.secret, ch.challenge) } });
  };
  const a = await link(first);
  expect(a.status).toBe(201);
  expect((await link(first)).body.linked_at).toBe(a.body.linked_at);
  expect((await first.api('/v1/publisher/overview')).body).toMatchObject({ calls: 3, linked_owners: [svc.owner] });
  expect((await link(second)).status).toBe(201);
  expect((await first.api('/v1/publisher/overview')).body).toMatchObject({ calls: 0, linked_owners: [] });
  expect((await second.api('/v1/publisher/overview')).body).toMatchObject({ calls: 3, linked_owners: [svc.owner] });
  const before = await s.usdc(svc.owner);
  const settled = await second.api('/v1/publisher/settle', { method: 'POST', body: {} });
  expect(settled.body).toMatchObject({ settled: true, settlement: { receiver: svc.owner, calls: 3 } });
  expect(await s.usdc(svc.owner)).toBe(before + splitFee(3n * 20_000n).net);
}, 60_000);
