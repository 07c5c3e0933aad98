// Issue 46, item 1: a settle-first x402 service (exact.settle: 'before-handler') whose handler fails refunds its payer
// in full, also when the handler is slow enough that a settlement funding tick ran between the settlement and the
// failure. The provider's offer says it settles first (extra.refundable: true, in what the payer accepts, so the
// facilitator's field-by-field check binds it), and the facilitator holds that payment's earning back from settlement
// batches for the refund window: a tick within the window claims the owner's other earnings and leaves it, the refund
// finds it unclaimed, and a payment whose handler answered is paid out by the first batch after the window. A stock x402
// client (its own process) pays on a devnet under the testnet passphrase; the window is 20 s here (10 minutes by default).
import type { Keypair } from '@stellar/stellar-sdk';
import { splitFee } from '@farebox/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startX402World, type X402World } from './x402-kit.js';

const PRICE = 1_000_021n; // 0.1000021 USDC
const WINDOW_MS = 20_000;
const id = process.pid % 100_000;
const PLAIN = `hold-plain-${id}`;
const FIRST = `hold-first-${id}`;
const SLOW = `hold-slow-${id}`;

let world: X402World;
let owner: Keypair;
let payer: Keypair;
const endpoints: Record<string, string> = {};
/** The owner's cycle as the funding tick run inside the slow handler left it. */
let afterTick: Awaited<ReturnType<X402World['gw']['core']['ledger']['listCycles']>>[number] | undefined;
/** The settle-first payment whose handler answered (held, then paid out after the window). */
let heldPayment = '';

beforeAll(async () => {
  world = await startX402World('x402-refund-hold', { env: { FAREBOX_X402_REFUND_WINDOW: `${WINDOW_MS / 1000}s` } });
  [owner, payer] = await Promise.all([world.account(), world.account(20n * PRICE)]);
  const publish = (service: string, handler: Parameters<X402World['publish']>[0]['handler'], settleFirst: boolean) =>
    world.publish({ service, price: PRICE, owner, handler, ...(settleFirst ? { exact: { settle: 'before-handler' as const } } : {}) });
  endpoints[PLAIN] = await publish(PLAIN, (payload) => ({ echo: payload }), false);
  endpoints[FIRST] = await publish(FIRST, (payload) => ({ echo: payload }), true);
  endpoints[SLOW] = await publish(
    SLOW,
    async () => {
      // Slow: the settlement funding tick runs (claims the owner's new earnings into a batch and funds it on chain), then the handler fails.
      await world.gw.core.settlement.engine!.tick();
      afterTick = (await world.gw.core.ledger.listCycles(owner.publicKey()))[0];
      throw new Error('the printer jammed');
    },
    true,
  );
}, 120_000);

afterAll(async () => {
  await world?.close();
});

async function balances() {
  const [p, o, t] = await Promise.all([world.chain.balances(payer.publicKey()), world.chain.balances(owner.publicKey()), world.chain.balances(world.treasury)]);
  return { payer: p.usdc!, owner: o.usdc!, treasury: t.usdc! };
}

describe('a settle-first payment’s earning is held back from settlement batches for the refund window', () => {
  it('the settle-first offer says so (extra.refundable), the after-handler offer does not', async () => {
    const { offer: first } = await world.stock('sign', endpoints[FIRST]!, payer, {});
    const { offer: plain } = await world.stock('sign', endpoints[PLAIN]!, payer, {});
    expect(first).toMatchObject({ extra: { areFeesSponsored: true, service: FIRST, refundable: true } });
    expect((plain as { extra: Record<string, unknown> }).extra).toEqual({ areFeesSponsored: true, service: PLAIN });
  }, 60_000);

  it('a handler failing after a funding tick claimed the owner’s other earnings is refunded in full: the payer’s USDC back to the base unit, the held earning untouched', async () => {
    const plain = await world.stock('pay', endpoints[PLAIN]!, payer, { n: 1 });
    expect(plain.status).toBe(200);
    const first = await world.stock('pay', endpoints[FIRST]!, payer, { n: 2 });
    expect(first.status).toBe(200);
    heldPayment = first.paymentResponse!.transaction;
    const held = await world.gw.core.ledger.exactPayment(heldPayment);
    expect(held!.holdUntil!.getTime() - held!.createdAt.getTime()).toBe(WINDOW_MS);
    expect((await world.gw.core.ledger.exactPayment(plain.paymentResponse!.transaction))!.holdUntil).toBeNull();

    const before = await balances();
    const out = await world.stock('pay', endpoints[SLOW]!, payer, {});
    expect(out.status).toBe(500);
    const transaction = out.paymentResponse!.transaction;
    const refund = (out.body.payment as { refund_transaction?: string }).refund_transaction;
    expect(out.body).toEqual({
      error: 'the printer jammed; the payment was refunded in full',
      payment: {
        settled: true,
        refunded: true,
        refund_transaction: refund,
        transaction,
        network: 'stellar:testnet',
        payer: payer.publicKey(),
        amount: PRICE.toString(),
        charged: '0',
        note: `${SLOW} settles before its handler runs and failed after the payment was settled: 0.1000021 USDC went back to ${payer.publicKey()} in transaction ${refund}; nothing was charged`,
      },
    });
    // The tick ran between the settlement and the failure: it claimed and funded the answered after-handler payment only.
    expect(afterTick).toMatchObject({ state: 'open', calls: 1, gross: PRICE, funded: PRICE });
    const after = await balances();
    // The payer paid the slow service and got it back: its USDC as before, to the base unit; the treasury paid the batch (PRICE) into the escrow.
    expect(after.payer).toBe(before.payer);
    expect(after.owner).toBe(0n);
    expect(await world.gw.core.ledger.exactPayment(transaction)).toMatchObject({ amount: PRICE, holdUntil: expect.any(Date) });
    const { rows } = await world.gw.core.ledger.db.query('SELECT state, payer, amount FROM exact_refunds WHERE payment_tx_hash = $1', [transaction]);
    expect(rows).toEqual([{ state: 'refunded', payer: payer.publicKey(), amount: PRICE.toString() }]);
    // Within the window the held payment is in no batch: another tick claims nothing.
    await world.gw.core.settlement.engine!.tick();
    expect((await world.gw.core.ledger.listCycles(owner.publicKey()))[0]).toMatchObject({ calls: 1, gross: PRICE });
    expect((await world.gw.core.ledger.verify()).mismatches).toEqual([]);
  }, 120_000);

  it('after the window the next batch pays the held payment: the owner receives 95 % of both answered calls, to the base unit', async () => {
    const held = await world.gw.core.ledger.exactPayment(heldPayment);
    const wait = held!.holdUntil!.getTime() - Date.now() + 500;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const cycle = await world.gw.core.settlement.engine!.settleNow(owner.publicKey());
    const { fee, net } = splitFee(2n * PRICE);
    expect(cycle).toMatchObject({ state: 'done', calls: 2, gross: 2n * PRICE, fee, net });
    expect((await balances()).owner).toBe(net);
    expect((await world.gw.core.ledger.verify()).mismatches).toEqual([]);
  }, 120_000);
});
