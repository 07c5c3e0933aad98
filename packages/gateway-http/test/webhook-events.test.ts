import { ClientError, createClient, type FareboxClient } from '@farebox/client';
import { verifyWebhook } from '@farebox/protocol';
import { splitFee } from '@farebox/protocol';
import { eventually } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';
import { startReceiver, type WebhookReceiver } from '@farebox/test-kit';

// The events the gateway's money makes, as a subscriber receives them:
// a settlement released and one marked failed, a dispute opened and resolved
// on a publisher's direct escrow, a spending budget passing 80 %. The real
// stack: gateway, devnet, escrow API, provider-SDK services.

let s: HttpStack;
/** The handler on a loopback port: the caller SDK takes the gateway's URL. */
let url: string;
const USDC = 10_000_000n;

/** Calls a service whose handler fails: the escrow is funded and not served. Returns its id. */
async function fundedNotServed(caller: { publicKey: string; secret: string; client: FareboxClient }, service: string): Promise<string> {
  const err = await caller.client.call(service, { q: 1 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ClientError) || err.code !== 'SERVICE' || !err.data.escrowId)
    throw new Error(`expected a service failure after funding, got ${String(err)}`);
  return err.data.escrowId;
}
const receivers: WebhookReceiver[] = [];
beforeAll(async () => {
  // Automatic refund at 0 minutes: a never-served escrow is refunded as soon as its funder disputes it.
  s = await startHttpStack({ gateway: { operators: { disputeAutoRefundMinutes: 0 } } });
  url = await s.listen();
}, 60_000);
afterAll(async () => {
  for (const r of receivers) await r.close();
  await s?.close();
});

async function subscribe(u: HttpAccount, events: string[]): Promise<{ receiver: WebhookReceiver; secret: string; id: string }> {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const w = await u.api('/v1/webhooks', { body: { url: receiver.url, events } });
  expect(w.status).toBe(201);
  return { receiver, secret: w.body.secret, id: w.body.id };
}
async function publisher(name: string): Promise<HttpAccount> {
  const pub = await s.account();
  expect((await pub.api('/v1/publisher/activate', { body: { name } })).status).toBe(200);
  await s.fundWallet(pub, 0n);
  return pub;
}
const verified = async (got: WebhookReceiver['received'][number], secret: string) =>
  (await verifyWebhook({ payload: got.body, signature: got.headers['farebox-signature'] as string, secret })).ok;

describe('settlement events', () => {
  it("sends settlement.released to the publisher's account with what the escrow paid, and settlement.failed when a cycle is marked failed", async () => {
    const pub = await publisher('Hooked Co');
    const { receiver, secret } = await subscribe(pub, ['settlement.released', 'settlement.failed']);
    const name = `hook-${process.pid % 100000}`;
    const { endpoint } = await s.serve(name, '0.0200001', pub.wallet);
    expect((await pub.api('/v1/agents', { body: { service: name, pricePerCallLamports: 200_001, endpoint, description: 'hooked' } })).status).toBe(201);
    const caller = await s.account({ topup: 5 });
    for (let i = 0; i < 3; i++) expect((await caller.api('/v1/call', { body: { service: name, payload: { i } } })).status).toBe(200);

    const settled = await pub.api('/v1/publisher/settle', { method: 'POST', body: {} });
    expect(settled.body.settlement.state).toBe('done');
    const got = await eventually('settlement.released arrives', () => receiver.received.find((r) => r.json.type === 'settlement.released'));
    expect(await verified(got, secret)).toBe(true);
    const gross = 3n * 200_001n;
    const { fee, net } = splitFee(gross);
    const release = settled.body.settlement.transactions.find((t: { step: string }) => t.step === 'release');
    expect(got.json.data).toEqual({
      cycle_id: String(settled.body.settlement.id),
      receiver: pub.wallet,
      escrow_id: settled.body.settlement.escrow_id,
      escrow_explorer_url: expect.stringContaining(settled.body.settlement.escrow_id),
      calls: 3,
      gross_base_units: Number(gross),
      gross_usd: Number(gross) / 1e7,
      fee_base_units: Number(fee),
      fee_usd: Number(fee) / 1e7,
      net_base_units: Number(net),
      net_usd: Number(net) / 1e7,
      tx_hash: release.tx_hash,
      explorer_url: release.explorer_url,
    });

    // Another cycle, funded, then marked failed (the operator's way out of a cycle that cannot finish).
    expect((await caller.api('/v1/call', { body: { service: name, payload: { i: 4 } } })).status).toBe(200);
    await s.core.settlement.engine!.tick();
    const open = (await s.core.ledger.activeCycles()).find((c) => c.publisherOwner === pub.wallet)!;
    await s.core.ledger.advance(open.id, open.state, 'failed', { error: 'the escrow provider lost the escrow' });
    const failed = await eventually('settlement.failed arrives', () => receiver.received.find((r) => r.json.type === 'settlement.failed'));
    expect(await verified(failed, secret)).toBe(true);
    expect(failed.json.data).toMatchObject({
      cycle_id: String(open.id),
      receiver: pub.wallet,
      calls: 1,
      gross_base_units: 200_001,
      previous_state: open.state,
      error: 'the escrow provider lost the escrow',
    });
    expect(receiver.received.map((r) => r.json.type).sort()).toEqual(['settlement.failed', 'settlement.released']);
  }, 120_000);
});

describe('dispute events', () => {
  it("sends dispute.opened and dispute.resolved to the account whose wallet funded the escrow (and would to the receiver's)", async () => {
    // An account pays a service directly from its custodial wallet (signed by the gateway's keystore), and the service fails.
    const payer = await s.account();
    await s.fundWallet(payer, 5n * USDC);
    const { receiver, secret } = await subscribe(payer, ['dispute.opened', 'dispute.resolved']);
    const down = await s.publish(
      'hook-down',
      '0.5',
      () => {
        throw new Error('upstream model unavailable');
      },
      { escrow: true },
    );
    const signer = { publicKey: payer.wallet, signTransaction: (xdr: string, passphrase: string) => s.core.wallets.sign(payer.wallet, xdr, passphrase) };
    const client = createClient({
      network: 'local',
      devnetUrl: s.devnet.url,
      signer,
      escrow: { apiKey: 'farebox-test', budget: { requests: 100_000, windowMs: 1000 } },
      gatewayUrl: url,
      env: {},
    });
    const escrowId = await fundedNotServed({ publicKey: payer.wallet, secret: '', client }, 'hook-down');
    const result = await client.dispute(escrowId, { reason: 'the service answered 502' });
    expect(result).toMatchObject({ state: 'resolved', resolution: 'refund' });

    const got = await eventually('both dispute events arrive', () => (receiver.received.length >= 2 ? receiver.received : undefined));
    // Deliveries are sent concurrently: events may arrive in any order (docs/webhooks.md).
    const both = ['dispute.opened', 'dispute.resolved'].map((type) => got.find((r) => r.json.type === type)!);
    expect(got).toHaveLength(2);
    for (const r of both) expect(await verified(r, secret)).toBe(true);
    expect(both[0]!.json.data).toMatchObject({
      role: 'funder',
      dispute: {
        escrow_id: escrowId,
        state: 'open',
        receiver: down.owner,
        requested_by: payer.wallet,
        reason: 'the service answered 502',
        amount_base_units: 5_000_000,
      },
    });
    expect(both[1]!.json.data).toMatchObject({
      role: 'funder',
      dispute: { escrow_id: escrowId, state: 'resolved', resolution: 'refund', resolve_tx: result.resolveTx, resolved_by: 'policy:auto-refund' },
    });
  }, 120_000);
});

describe('budget events', () => {
  it('sends budget.threshold_reached once, when a key has used 80 % of its limit for the period', async () => {
    const owner = await s.account({ topup: 5 });
    const { receiver, secret } = await subscribe(owner, ['budget.threshold_reached']);
    await s.publish('hook-budget', '0.2');
    const key = await owner.api('/v1/api-keys', { body: { name: 'agent', limit_usd: 1, limit_period: 'day' } });
    expect(key.status).toBe(201);
    const call = () =>
      s.request('/v1/call', { body: { service: 'hook-budget', payload: {} }, headers: { authorization: `Bearer ${key.body.key}` } }).then((r) => r.status);
    for (let i = 0; i < 3; i++) expect(await call()).toBe(200);
    await s.core.webhooks.worker.flush();
    expect(receiver.received).toHaveLength(0);
    expect(await call()).toBe(200);
    const got = await eventually('the threshold event arrives', () => receiver.received[0]);
    expect(await verified(got, secret)).toBe(true);
    expect(got.json.data).toEqual({
      credential: { type: 'api_key', id: key.body.id },
      period: expect.stringMatching(/^day:\d{4}-\d{2}-\d{2}$/),
      threshold_percent: 80,
      limit_base_units: 10_000_000,
      limit_usd: 1,
      used_base_units: 8_000_000,
      used_usd: 0.8,
      remaining_base_units: 2_000_000,
      remaining_usd: 0.2,
    });
    // The fifth call spends the rest: no second event for the period.
    expect(await call()).toBe(200);
    expect(await call()).toBe(402);
    await s.core.webhooks.worker.flush();
    expect(receiver.received).toHaveLength(1);
  }, 120_000);
});
