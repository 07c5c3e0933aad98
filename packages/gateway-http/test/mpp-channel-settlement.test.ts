import { Keypair, rpc } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatPaymentCredential, parsePaymentChallenges, type PaymentChallenge } from '@farebox/protocol';
import { channelInvoke, commitmentBytes, keypairSigner } from '@farebox/stellar';
import { openTestChannel } from './channel-kit.js';
import { startHttpStack, type HttpStack } from './kit.js';

// The money of a channel session end to end on the devnet (docs/settlement.md, "Channel sessions"): calls over
// three services paid with vouchers, nothing moving on chain per call; the funder starts closing, the watcher closes
// with the last paid voucher before the refund period can end; the treasury holds exactly what was paid, the funder
// has the rest back, and each owner is released 95 % of its services' gross.

const CALLS = Number(process.env.MPP_SETTLEMENT_CALLS ?? 1000);

describe('a channel session settled', () => {
  let h: HttpStack;
  let server: rpc.Server;
  const commit = Keypair.random();
  let funder: Keypair;
  const DEPOSIT = 100_000_000n;
  const services = [
    { name: 'sess-a', price: '0.002', units: 20_000n },
    { name: 'sess-b', price: '0.003', units: 30_000n },
    { name: 'sess-c', price: '0.005', units: 50_000n },
  ];
  const owners: string[] = [];
  let channel: string;

  beforeAll(async () => {
    h = await startHttpStack();
    server = new rpc.Server(h.core.network.rpcUrl, { allowHttp: true });
    for (const s of services) owners.push((await h.publish(s.name, s.price)).owner);
    ({ id: channel, funder } = await openTestChannel(h, { amount: DEPOSIT, key: commit }));
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it(`${CALLS} calls over three services cost the funder exactly their prices; the owners get 95 % once the watcher closed`, async () => {
    const withdrawals = () => h.devnet.chain.events.filter((e) => e.contractId === channel).length;
    const eventsBefore = withdrawals();
    let cumulative = 0n;
    const gross = new Map<string, bigint>();
    // One challenge per service, answered for every call of it while it lasts (each voucher names the new cumulative).
    const challenges = new Map<string, PaymentChallenge>();
    for (const s of services) {
      const unpaid = await h.request('/v1/call', { method: 'POST', body: { service: s.name, payload: {} }, headers: { 'farebox-channel': channel } });
      challenges.set(s.name, parsePaymentChallenges(unpaid.headers.get('www-authenticate') ?? undefined)[0]!);
    }
    for (let i = 0; i < CALLS; i++) {
      const s = services[i % 3]!;
      const ch = challenges.get(s.name)!;
      const next = cumulative + s.units;
      const signature = commit.sign(commitmentBytes(channel, next, h.core.network.passphrase)).toString('hex');
      const paid = await h.request('/v1/call', {
        method: 'POST',
        body: { service: s.name, payload: { i } },
        headers: { authorization: formatPaymentCredential({ challenge: ch, payload: { action: 'voucher', amount: next.toString(), signature } }) },
      });
      expect(paid.status).toBe(200);
      cumulative = next;
      gross.set(s.name, (gross.get(s.name) ?? 0n) + s.units);
    }
    // No transaction per call: the channel emitted nothing.
    expect(withdrawals()).toBe(eventsBefore);
    const treasuryBefore = await h.usdc(h.core.treasuryAddress);
    const funderBefore = await h.usdc(funder.publicKey());
    expect(await h.core.ledger.channels.get(channel)).toMatchObject({ paid: cumulative, withdrawn: 0n });
    // Nothing is released before the channel's money is the treasury's.
    expect((await h.core.settlement.settle(owners[0]!)).settled).toBe(false);

    await channelInvoke(server, h.core.network, keypairSigner(funder.secret()), channel, { fn: 'close_start' });
    const actions = await h.core.mpp.watcher!.tick();
    expect(actions).toMatchObject([{ channel, action: 'close', amount: cumulative }]);
    expect(await h.usdc(h.core.treasuryAddress)).toBe(treasuryBefore + cumulative);
    // close pays the recipient and gives the funder the rest at once: no refund period to wait out.
    expect(await h.usdc(funder.publicKey())).toBe(funderBefore + DEPOSIT - cumulative);
    expect(await h.core.ledger.channels.get(channel)).toMatchObject({ paid: cumulative, withdrawn: cumulative, state: 'closed' });
    // A second pass finds nothing to do.
    expect(await h.core.mpp.watcher!.tick()).toEqual([]);

    for (const [i, s] of services.entries()) {
      const owner = owners[i]!;
      const before = await h.usdc(owner);
      const r = await h.core.settlement.settle(owner);
      expect(r.settled).toBe(true);
      const g = gross.get(s.name)!;
      expect(await h.usdc(owner)).toBe(before + (g * 95n) / 100n);
    }
    expect((await h.core.ledger.verify()).mismatches).toEqual([]);
  }, 300_000);
});
