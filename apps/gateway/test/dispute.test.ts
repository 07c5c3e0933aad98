import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair } from '@stellar/stellar-sdk';
import { startStack, type Stack } from './settlement-kit.js';
import { USDC, fundedNotServed, newCaller, proofFor } from './dispute-kit.js';

// Automatic policy at 0 minutes: a never-served escrow is refunded as soon as its funder disputes it.
let s: Stack;
let down: { owner: string };
let healthy: { owner: string };
beforeAll(async () => {
  s = await startStack({ env: { FAREBOX_DISPUTE_AUTO_REFUND_MINUTES: '0' } });
  down = await s.publish('disp-down', '0.5', () => {
    throw new Error('upstream model unavailable');
  });
  healthy = await s.publish('disp-ok', '0.25');
}, 60_000);
afterAll(async () => {
  await s?.close();
});

describe('disputes on direct escrows (automatic refund policy)', () => {
  it('refunds in full to the caller an escrow funded for a service that is down, through the real escrow API and signatures', async () => {
    const caller = await newCaller(s, 10n * USDC);
    const treasury = s.gw.core.treasuryAddress;
    const before = { caller: await s.usdc(caller.publicKey), owner: await s.usdc(down.owner), treasury: await s.usdc(treasury) };

    const escrowId = await fundedNotServed(caller, 'disp-down');
    expect(await s.usdc(caller.publicKey)).toBe(before.caller - 5_000_000n);
    const escrow = await caller.client.getEscrow(escrowId);
    expect(escrow).toMatchObject({
      balance: 5_000_000n,
      roles: { disputeResolver: treasury, platformAddress: treasury, receiver: down.owner },
      flags: { released: false },
    });

    const result = await caller.client.dispute(escrowId, { reason: 'the service answered 502' });

    expect(result).toMatchObject({ escrowId, state: 'resolved', resolution: 'refund', distributions: [{ address: caller.publicKey, amount: 5_000_000n }] });
    expect(result.txHash).toMatch(/^[0-9a-f]{64}$/);
    expect(result.resolveTx).toMatch(/^[0-9a-f]{64}$/);
    expect(await s.usdc(caller.publicKey)).toBe(before.caller);
    expect(await s.usdc(down.owner)).toBe(before.owner);
    expect(await s.usdc(treasury)).toBe(before.treasury);
    expect(await caller.client.getEscrow(escrowId)).toMatchObject({ balance: 0n, flags: { resolved: true, disputed: false, released: false } });
    expect(await caller.client.getDispute(escrowId)).toMatchObject({ state: 'resolved', resolveTx: result.resolveTx });
  });

  it('answers a repeated dispute with the same record and moves nothing', async () => {
    const caller = await newCaller(s, 2n * USDC);
    const escrowId = await fundedNotServed(caller, 'disp-down');
    const first = await caller.client.dispute(escrowId);
    const balance = await s.usdc(caller.publicKey);
    const again = await caller.client.dispute(escrowId);
    expect(again).toEqual(first);
    expect(await s.usdc(caller.publicKey)).toBe(balance);
  });

  it('refuses a dispute from someone who did not fund the escrow, and one whose proof names another escrow', async () => {
    const caller = await newCaller(s, 2n * USDC);
    const escrowId = await fundedNotServed(caller, 'disp-down');
    const stranger = Keypair.random();
    const passphrase = s.gw.core.network.passphrase;
    const foreign = await s.request('/v1/disputes', { body: { escrowId, proof: proofFor(stranger.secret(), escrowId, passphrase) } });
    expect(foreign).toMatchObject({ status: 403, body: { error: 'only a funder of the escrow can dispute it' } });
    const other = await s.request('/v1/disputes', {
      body: { escrowId, proof: proofFor(caller.secret, escrowId, passphrase, { value: 'CAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }) },
    });
    expect(other).toMatchObject({ status: 400, body: { error: 'invalid dispute proof: it is for another escrow' } });
    const now = Math.floor(Date.now() / 1000);
    const stale = await s.request('/v1/disputes', {
      body: { escrowId, proof: proofFor(caller.secret, escrowId, passphrase, { window: [now - 900, now - 600] }) },
    });
    expect(stale).toMatchObject({ status: 400, body: { error: 'invalid dispute proof: expired or not yet valid' } });
    const junk = await s.request('/v1/disputes', { body: { escrowId, proof: 'bm90IHhkcg==', extra: 1 } });
    expect(junk).toMatchObject({ status: 400, body: { error: 'unknown field: extra' } });
    expect(await caller.client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { disputed: false, resolved: false } });
    expect(await caller.client.getDispute(escrowId)).toBeUndefined();
  });

  it('refuses to dispute an escrow the service served and released: the service was paid', async () => {
    const caller = await newCaller(s, 2n * USDC);
    const out = await caller.client.call('disp-ok', { q: 2 });
    expect(out.releaseTx).toBeDefined();
    const err = await caller.client.dispute(out.escrowId!).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/HTTP 409.*already released: the service was paid/);
    expect(healthy.owner).toMatch(/^G/);
  });
});
