import { Keypair } from '@stellar/stellar-sdk';
import { publisherLinkChallenge, splitFee } from '@farebox/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

// Issue 50, item 1: a service registered with its own key (a provider-SDK service's .farebox/keypair) earns
// under that key; its publisher sees the earnings by owner without an account, and in the account's views
// (overview, settlements, analytics, settle-now) once the key signed the account's link challenge.

let s: HttpStack;
let pub: HttpAccount;
let svc: { owner: string; secret: string; endpoint: string };
const name = `linked-${process.pid % 100000}`;
const sign = (secret: string, text: string) => Keypair.fromSecret(secret).sign(Buffer.from(text, 'utf8')).toString('base64');

beforeAll(async () => {
  s = await startHttpStack();
  pub = await s.account();
  expect((await pub.api('/v1/publisher/activate', { body: { name: 'Key Owner' } })).status).toBe(200);
  svc = await s.publish(name, '0.002');
  const caller = await s.account({ topup: 5 });
  for (let i = 0; i < 4; i++) expect((await caller.api('/v1/call', { body: { service: name, payload: { i } } })).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await s?.close();
});

const gross = 4n * 20_000n;
const { fee, net } = splitFee(gross);

describe('GET /v1/publisher/by-owner/:owner (no credential, read-only)', () => {
  it("shows the key's services, calls, gross, fee and net", async () => {
    const r = await s.request(`/v1/publisher/by-owner/${svc.owner}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      owner: svc.owner,
      fee: { pct: 5 },
      calls: 4,
      gross_base_units: Number(gross),
      fee_base_units: Number(fee),
      net_base_units: Number(net),
      net_usd: 0.0076,
      pending_base_units: Number(net),
      settled_base_units: 0,
      payouts: [],
    });
    expect(r.body.services.map((x: { service: string }) => x.service)).toEqual([name]);
    // The catalog's totalEarned is the same net.
    expect(r.body.services[0]).toMatchObject({ totalCalls: 4, totalEarned: 0.0076 });
  });
  it('refuses what is not an account key', async () => {
    expect(await s.request('/v1/publisher/by-owner/nobody')).toMatchObject({ status: 400, body: { error: 'owner is not a Stellar account key (G...)' } });
  });
});

describe('linking the key to the account', () => {
  it('before the link, the account sees none of it', async () => {
    const o = await pub.api('/v1/publisher/overview');
    expect(o.body).toMatchObject({ calls: 0, services: [], linked_owners: [] });
  });

  it('refuses a wrong signature, another account’s challenge, an expired one and a non-key, linking nothing', async () => {
    const other = Keypair.random();
    const { body: ch } = await pub.api('/v1/publisher/links/challenge', { body: { owner: svc.owner } });
    expect(ch.challenge).toMatch(/^farebox-publisher-link:v1\nowner: G/);
    expect(
      await pub.api('/v1/publisher/links', { body: { owner: svc.owner, challenge: ch.challenge, signature: sign(other.secret(), ch.challenge) } }),
    ).toMatchObject({
      status: 400,
      body: {
        error: `signature does not verify with the owner key ${svc.owner}: sign the challenge with its secret (farebox publisher link --keypair .farebox/keypair)`,
      },
    });
    const foreign = publisherLinkChallenge({ owner: svc.owner, account: 'someone-else', expiresAt: Date.now() + 60_000 });
    expect((await pub.api('/v1/publisher/links', { body: { owner: svc.owner, challenge: foreign, signature: sign(svc.secret, foreign) } })).body.error).toBe(
      'not a challenge of this gateway for this owner and account: ask POST /v1/publisher/links/challenge for one',
    );
    const expired = publisherLinkChallenge({ owner: svc.owner, account: pub.id, expiresAt: Date.now() - 1000 });
    expect((await pub.api('/v1/publisher/links', { body: { owner: svc.owner, challenge: expired, signature: sign(svc.secret, expired) } })).body.error).toBe(
      'challenge expired: ask POST /v1/publisher/links/challenge for a new one and sign it within 10 minutes',
    );
    expect((await pub.api('/v1/publisher/links/challenge', { body: { owner: 'GNOPE' } })).body.error).toBe('owner is not a Stellar account key (G...)');
    expect((await pub.api('/v1/publisher/overview')).body.linked_owners).toEqual([]);
  });

  it('a publisher account is needed', async () => {
    const plain = await s.account();
    expect(await plain.api('/v1/publisher/links/challenge', { body: { owner: svc.owner } })).toMatchObject({
      status: 403,
      body: { error: 'activate publishing first (POST /v1/publisher/activate)' },
    });
  });

  it('once linked, overview, analytics, settle-now and settlements cover the key; the key’s wallet gets exactly 95 % of the gross', async () => {
    const { body: ch } = await pub.api('/v1/publisher/links/challenge', { body: { owner: svc.owner } });
    const linked = await pub.api('/v1/publisher/links', { body: { owner: svc.owner, challenge: ch.challenge, signature: sign(svc.secret, ch.challenge) } });
    expect(linked.status).toBe(201);
    expect(linked.body).toMatchObject({ owner: svc.owner, linked: true, services: [{ service: name, totalCalls: 4, ownerWallet: svc.owner }] });

    const o = await pub.api('/v1/publisher/overview');
    expect(o.body).toMatchObject({
      calls: 4,
      linked_owners: [svc.owner],
      gross_base_units: Number(gross),
      fee_base_units: Number(fee),
      earned_base_units: Number(net),
      pending_base_units: Number(net),
    });
    expect(o.body.services.map((x: { service: string }) => x.service)).toEqual([name]);
    const days = (await pub.api('/v1/publisher/analytics?days=1')).body;
    expect(days).toMatchObject([{ calls: 4, earned_base_units: Number(net) }]);

    const before = await s.usdc(svc.owner);
    const settled = await pub.api('/v1/publisher/settle', { method: 'POST', body: {} });
    expect(settled.status).toBe(200);
    expect(settled.body).toMatchObject({ settled: true, settlement: { state: 'done', receiver: svc.owner, calls: 4, net: { base_units: Number(net) } } });
    expect(settled.body.settlements).toHaveLength(1);
    expect(await s.usdc(svc.owner)).toBe(before + net);
    expect(net * 100n).toBe(gross * 95n);

    const list = (await pub.api('/v1/publisher/settlements')).body;
    expect(list.map((c: { receiver: string; state: string }) => [c.receiver, c.state])).toEqual([[svc.owner, 'done']]);
    const byOwner = (await s.request(`/v1/publisher/by-owner/${svc.owner}`)).body;
    expect(byOwner).toMatchObject({ settled_base_units: Number(net), pending_base_units: 0, payouts: [{ state: 'done', paid: { base_units: Number(net) } }] });
    expect(byOwner.payouts[0].transactions.map((t: { step: string }) => t.step)).toContain('release');
    // The devnet explorer's page of the owner's account lists the release that paid it, and the USDC it moved.
    const release = byOwner.payouts[0].transactions.find((t: { step: string }) => t.step === 'release');
    const page = await (await fetch(`${s.devnet.url}/explorer/local/account/${svc.owner}`)).text();
    expect(page).toContain(`/tx/${release.tx_hash}`);
    expect(page).toContain(`+${(Number(net) / 1e7).toFixed(7)} USDC`);
    expect((await pub.api('/v1/publisher/overview')).body).toMatchObject({ settled_base_units: Number(net), pending_base_units: 0 });
  }, 60_000);
});
