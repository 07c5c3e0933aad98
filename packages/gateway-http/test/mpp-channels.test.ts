import { Keypair } from '@stellar/stellar-sdk';
import { Credential, Method, z } from 'mppx';
import { Mppx as ClientMppx } from 'mppx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatPaymentCredential, parsePaymentChallenges, parsePaymentCredential, parsePaymentReceipt, type PaymentChallenge } from '@farebox/protocol';
import { commitmentBytes } from '@farebox/stellar';
import { certificateClaims } from '@farebox/gateway-core/testing';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { createChannelPayer } from '@farebox/client';
import { openTestChannel } from './channel-kit.js';
import { startHttpStack, type HttpStack } from './kit.js';

const run = promisify(execFile);

// MPP channel sessions through POST /v1/call (docs/protocol.md, "MPP channel sessions"): an agent with no account
// opens a one-way channel to the treasury on the devnet and pays catalog services with vouchers, the cumulative
// amount signed by its commitment key. Every refusal is a 402 with the draft's problem and a fresh challenge on the
// channel's cumulative amount; a failed call counts nothing.

describe('MPP channel sessions through the gateway', () => {
  let h: HttpStack;
  let channel: string;
  const commit = Keypair.random();
  const passphrase = () => h.core.network.passphrase;

  const open = (o: { amount: bigint; recipient?: string; period?: number; key?: Keypair }) =>
    openTestChannel(h, { ...o, key: o.key ?? commit, funds: 10_000_000n });

  /** An unpaid call naming the channel: the 402 and its challenge. */
  async function challenge(service: string, on = channel) {
    const r = await h.request('/v1/call', { method: 'POST', body: { service, payload: { n: 1 } }, headers: { 'farebox-channel': on } });
    return { r, ch: parsePaymentChallenges(r.headers.get('www-authenticate') ?? undefined)[0] };
  }

  function voucher(ch: PaymentChallenge, amount: bigint, key = commit, on = String(ch.request.channel)) {
    const signature = key.sign(commitmentBytes(on, amount, passphrase())).toString('hex');
    return formatPaymentCredential({ challenge: ch, payload: { action: 'voucher', amount: amount.toString(), signature } });
  }

  const pay = (service: string, authorization: string, payload: unknown = { n: 1 }) =>
    h.request('/v1/call', { method: 'POST', body: { service, payload }, headers: { authorization } });

  beforeAll(async () => {
    h = await startHttpStack();
    await h.publish('chan-echo', '0.002');
    await h.publish('chan-words', '0.005', (p) => ({ words: String((p as { text?: string }).text ?? '').split(' ').length }));
    await h.publish('chan-broken', '0.002', () => {
      throw new Error('the model is down');
    });
    ({ id: channel } = await open({ amount: 1_000_000n }));
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('answers an unpaid call on a channel with a stellar/channel challenge on its cumulative amount', async () => {
    const { r, ch } = await challenge('chan-echo');
    expect(r.status).toBe(402);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(ch).toMatchObject({ method: 'stellar', intent: 'channel', realm: new URL(h.origin).host });
    expect(ch!.request).toMatchObject({ amount: '20000', channel, methodDetails: { network: h.core.network.x402Network, cumulativeAmount: '0' } });
    expect(r.body).toMatchObject({ type: 'https://paymentauth.org/problems/payment-required', status: 402, challengeId: ch!.id, code: 'PAYMENT_REQUIRED' });
    // Without a channel and without a credential it is an ordinary unauthenticated request.
    const none = await h.request('/v1/call', { method: 'POST', body: { service: 'chan-echo', payload: {} } });
    expect(none.status).toBe(401);
  });

  it('pays calls with vouchers: 200, the result, a receipt; the channel counts exactly the prices', async () => {
    const first = await challenge('chan-echo');
    const a = await pay('chan-echo', voucher(first.ch!, 20_000n));
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({
      result: { echo: { n: 1 } },
      paidWith: 'channel',
      cost: { base_units: 20000 },
      channel: { id: channel, cumulativeAmount: '20000' },
    });
    const receipt = parsePaymentReceipt(String(a.headers.get('payment-receipt')));
    expect(receipt).toMatchObject({
      status: 'success',
      method: 'stellar',
      challengeId: first.ch!.id,
      reference: first.ch!.request.methodDetails && (first.ch!.request.methodDetails as { reference: string }).reference,
    });
    expect(a.headers.get('cache-control')).toBe('private');

    const second = await challenge('chan-words');
    expect((second.ch!.request.methodDetails as { cumulativeAmount: string }).cumulativeAmount).toBe('20000');
    const b = await pay('chan-words', voucher(second.ch!, 70_000n), { text: 'one two three' });
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ result: { words: 3 } });
    const row = await h.core.ledger.channels.get(channel);
    expect(row).toMatchObject({ paid: 70_000n, state: 'open', withdrawn: 0n });
  });

  it('refuses a replayed voucher, a wrong amount and another key, each with a fresh challenge, and counts nothing', async () => {
    const { ch } = await challenge('chan-echo');
    const good = voucher(ch!, 90_000n);
    expect((await pay('chan-echo', good)).status).toBe(200);
    const replay = await pay('chan-echo', good);
    expect(replay.status).toBe(402);
    expect(replay.body).toMatchObject({ type: 'https://paymentauth.org/problems/verification-failed', code: 'PAYMENT_REFUSED' });
    expect(String((replay.body as { detail: string }).detail)).toContain('the next voucher is for 110000');
    const fresh = parsePaymentChallenges(replay.headers.get('www-authenticate') ?? undefined)[0]!;
    expect(fresh.id).not.toBe(ch!.id);
    expect((fresh.request.methodDetails as { cumulativeAmount: string }).cumulativeAmount).toBe('90000');

    const lowered = await pay('chan-echo', voucher(fresh, 100_000n));
    expect(lowered.status).toBe(402);
    expect(String((lowered.body as { detail: string }).detail)).toContain("is not the channel's cumulative plus this call's price");
    const stranger = await pay('chan-echo', voucher(fresh, 110_000n, Keypair.random()));
    expect(stranger.status).toBe(402);
    expect((stranger.body as { detail: string }).detail).toBe("the voucher's signature does not verify with the channel's commitment key");
    expect((await h.core.ledger.channels.get(channel))?.paid).toBe(90_000n);
  });

  it('binds a challenge to its service and price: one for chan-echo does not pay chan-words', async () => {
    const { ch } = await challenge('chan-echo');
    const r = await pay('chan-words', voucher(ch!, 140_000n));
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ type: 'https://paymentauth.org/problems/invalid-challenge' });
    const forged = { ...ch!, request: { ...ch!.request, amount: '1' } };
    expect((await pay('chan-echo', voucher(forged, 90_001n))).body).toMatchObject({ type: 'https://paymentauth.org/problems/invalid-challenge' });
    expect((await h.core.ledger.channels.get(channel))?.paid).toBe(90_000n);
  });

  it('answers a credential naming a channel it does not know with its refusal alone: no chain read, no challenge', async () => {
    const { ch } = await challenge('chan-echo');
    const unknown = 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA';
    const forged = { ...ch!, request: { ...ch!.request, channel: unknown } };
    const r = await pay('chan-echo', voucher(forged, 20_000n, commit, unknown));
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ type: 'https://paymentauth.org/problems/invalid-challenge' });
    expect(r.headers.get('www-authenticate')).toBeNull();
    expect(await h.core.ledger.channels.get(unknown)).toBeNull();
  });

  it('counts nothing for a failed call: the same amount pays the next one', async () => {
    const { ch } = await challenge('chan-broken');
    const failed = await pay('chan-broken', voucher(ch!, 110_000n));
    expect(failed.status).toBe(500);
    expect(failed.body).toMatchObject({ code: 'UPSTREAM', refunded: true });
    expect(String((failed.body as { error: string }).error)).toContain('nothing was charged');
    expect((await h.core.ledger.channels.get(channel))?.paid).toBe(90_000n);
    const again = await challenge('chan-echo');
    expect((await pay('chan-echo', voucher(again.ch!, 110_000n))).status).toBe(200);
    expect((await h.core.ledger.channels.get(channel))?.paid).toBe(110_000n);
  });

  it("refuses a channel that does not pay the treasury, and vouchers above the channel's deposit", async () => {
    const elsewhere = await open({ amount: 100_000n, recipient: Keypair.random().publicKey() });
    const r = await challenge('chan-echo', elsewhere.id);
    expect(r.r.status).toBe(402);
    expect(r.r.headers.get('www-authenticate') ?? undefined).toBeUndefined();
    expect(String((r.r.body as { detail: string }).detail)).toContain("not this gateway's treasury");

    const small = await open({ amount: 30_000n });
    const one = await challenge('chan-echo', small.id);
    expect((await pay('chan-echo', voucher(one.ch!, 20_000n))).status).toBe(200);
    const two = await challenge('chan-echo', small.id);
    const over = await pay('chan-echo', voucher(two.ch!, 40_000n));
    expect(over.status).toBe(402);
    expect(over.body).toMatchObject({ type: 'https://paymentauth.org/problems/payment-insufficient' });
  });

  it("certifies each call at its price, not at the channel's running total", async () => {
    const seen: Array<string | string[] | undefined> = [];
    const raw = createServer((req, res) => {
      seen.push(req.headers['farebox-certificate']);
      req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    try {
      await h.registerRaw('chan-raw', `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`, '0.002');
      const paid = (await h.core.ledger.channels.get(channel))!.paid;
      const { ch } = await challenge('chan-raw');
      expect((await pay('chan-raw', voucher(ch!, paid + 20_000n))).status).toBe(200);
      expect(certificateClaims(seen[0]).amt).toBe('20000');
    } finally {
      raw.close();
    }
  });

  it("is paid by @farebox/client's channel payer, which signs only its own count plus the price", async () => {
    const own = await open({ amount: 200_000n });
    const payer = createChannelPayer({
      baseUrl: h.origin,
      channel: own.id,
      commitmentSecret: commit.secret(),
      networkPassphrase: passphrase(),
      fetch: h.fetch,
    });
    const a = await payer.call<{ echo: unknown }>('chan-echo', { k: 1 });
    expect(a).toMatchObject({ result: { echo: { k: 1 } }, price: 20_000n, cumulativeAmount: 20_000n, receipt: { status: 'success', method: 'stellar' } });
    const b = await payer.call('chan-words', { text: 'a b' });
    expect(b.cumulativeAmount).toBe(70_000n);
    await expect(payer.call('chan-broken')).rejects.toMatchObject({ code: 'SERVICE', data: { status: 500, refunded: true } });
    expect(await payer.cumulativeAmount()).toBe(70_000n);
    await expect(payer.call('chan-words', {}, { maxCost: 10_000n })).rejects.toMatchObject({ code: 'PRICE_LIMIT' });
    // A payer whose count is behind the gateway's (another process paid from the channel) signs nothing.
    const stale = createChannelPayer({
      baseUrl: h.origin,
      channel: own.id,
      commitmentSecret: commit.secret(),
      networkPassphrase: passphrase(),
      fetch: h.fetch,
    });
    await expect(stale.call('chan-echo')).rejects.toMatchObject({ code: 'PAYMENT_REFUSED', message: expect.stringContaining('the gateway counts 70000') });
    expect((await h.core.ledger.channels.get(own.id))?.paid).toBe(70_000n);
  });

  it('opens no other door: a Payment credential reaches POST /v1/call alone', async () => {
    const { ch } = await challenge('chan-echo');
    const credential = voucher(ch!, 1n);
    for (const [method, path] of [
      ['GET', '/v1/balance'],
      ['GET', '/v1/me'],
      ['POST', '/v1/api-keys'],
      ['GET', '/v1/agents'],
      ['POST', '/v1/topup'],
    ] as const) {
      const r = await h.request(path, { method, headers: { authorization: credential }, ...(method === 'POST' ? { body: {} } : {}) });
      expect([path, r.status]).toEqual([path, 401]);
    }
    // A session cookie with a Farebox-Channel header is the session's call (the /v1 chain), not an anonymous one.
    const user = await h.account();
    const r = await h.request('/v1/call', {
      method: 'POST',
      body: { service: 'chan-echo', payload: {} },
      headers: { cookie: user.cookie, 'x-csrf-token': user.csrf, 'farebox-channel': channel },
    });
    expect(r.status).not.toBe(402);
  });

  it('loses nothing and counts nothing twice when a gateway dies between storing a voucher and posting it', async () => {
    const own = await open({ amount: 100_000n });
    const { ch } = await challenge('chan-echo', own.id);
    const credential = voucher(ch!, 20_000n);
    // A gateway stores the voucher for its call and dies before the service answers (its post never comes).
    const sessions = h.core.mpp.sessions!;
    await sessions.accept(parsePaymentCredential(credential), { service: 'chan-echo', owner: 'G-owner-of-the-dead-call' }, 20_000n, 'call_died');
    expect((await h.core.ledger.channels.get(own.id))?.pending).toMatchObject({ callId: 'call_died', amount: 20_000n });
    // While its lease lasts the channel is busy: the same voucher, sent again, pays nothing yet.
    const busy = await pay('chan-echo', credential);
    expect(busy.status).toBe(402);
    expect((busy.body as { detail: string }).detail).toContain('another call on this channel is in progress');
    // Once the lease is over, the same voucher pays the call it was signed for, once.
    h.clock.advance(h.core.config.callTimeoutMs + 6_000);
    const paid = await pay('chan-echo', credential);
    expect(paid.status).toBe(200);
    expect(await h.core.ledger.channels.get(own.id)).toMatchObject({ paid: 20_000n, pending: null });
    expect((await pay('chan-echo', credential)).status).toBe(402);
    // The dead call's late post (a restarted process finishing it) changes nothing.
    expect((await h.core.ledger.channels.post(own.id, 'call_died')).applied).toBe(false);
    expect((await h.core.ledger.verify()).mismatches).toEqual([]);
  });

  it('is paid by a client made of mppx and the Stellar SDK alone, in its own process, over HTTP', async () => {
    const own = await open({ amount: 100_000n });
    const origin = await h.listen();
    const script = fileURLToPath(new URL('./fixtures/mppx-channel-client.mjs', import.meta.url));
    const { stdout } = await run(process.execPath, [script, origin, own.id, commit.secret(), passphrase(), 'chan-echo', '3'], { cwd: dirname(script) });
    const answers = JSON.parse(stdout) as Array<{ status: number; receipt: boolean; body: { result: unknown; paidWith: string } }>;
    expect(answers.map((a) => [a.status, a.receipt, a.body.paidWith])).toEqual([
      [200, true, 'channel'],
      [200, true, 'channel'],
      [200, true, 'channel'],
    ]);
    expect(answers[2]!.body.result).toEqual({ echo: { i: 2 } });
    expect((await h.core.ledger.channels.get(own.id))?.paid).toBe(60_000n);
  });

  it('is paid by mppx, a client nobody here wrote, reading our challenge and sending its credential', async () => {
    const stellarChannel = Method.from({
      name: 'stellar',
      intent: 'channel',
      schema: {
        request: z.object({
          amount: z.string(),
          channel: z.string(),
          description: z.optional(z.string()),
          methodDetails: z.object({ reference: z.string(), network: z.string(), cumulativeAmount: z.string() }),
        }),
        credential: { payload: z.object({ action: z.string(), amount: z.string(), signature: z.string() }) },
      },
    });
    const client = ClientMppx.create({
      polyfill: false,
      fetch: (input: RequestInfo | URL, init?: RequestInit) => h.fetch(input as string, init),
      methods: [
        Method.toClient(stellarChannel, {
          async createCredential({ challenge }) {
            const next = BigInt(challenge.request.methodDetails.cumulativeAmount) + BigInt(challenge.request.amount);
            const signature = commit.sign(commitmentBytes(challenge.request.channel, next, passphrase())).toString('hex');
            return Credential.serialize({ challenge, payload: { action: 'voucher', amount: next.toString(), signature } });
          },
        }),
      ],
    });
    const res = await client.fetch(`${h.origin}/v1/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'farebox-channel': channel },
      body: JSON.stringify({ service: 'chan-echo', payload: { from: 'mppx' } }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ result: { echo: { from: 'mppx' } }, paidWith: 'channel' });
    expect((await h.core.ledger.channels.get(channel))?.paid).toBe(150_000n);
  });
});
