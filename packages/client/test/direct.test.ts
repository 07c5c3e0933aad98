import { readFile } from 'node:fs/promises';
import { X402_HEADERS, decodePaymentResponse, encodePaymentHeader, splitFee } from '@farebox/protocol';
import { describe, expect, it } from 'vitest';
import { MemoryServedEscrowStore, createEscrowVerifier } from '@farebox/provider';
import { createAccounts, keypairSigner } from '@farebox/stellar';
import { ClientError, EndpointVerificationError, type ProgressEvent } from '../src/index.js';
import { USDC, newSecret, openEscrow, post, quoteOf, useWorld } from './helpers.js';

const world = useWorld();

async function failure(p: Promise<unknown>): Promise<ClientError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ClientError);
  return e as ClientError;
}

describe('direct escrow calls', () => {
  it('pays through an escrow, gets served, and the service releases it: 95% to the owner, 5% to the treasury', async () => {
    const service = await world.publish('dir-echo');
    const payer = await world.party(10n * USDC);
    const events: ProgressEvent[] = [];
    const before = { payer: world.usdcOf(payer.publicKey), owner: world.usdcOf(service.owner.publicKey), treasury: world.usdcOf(world.treasury.publicKey) };

    const out = await world.client(payer).call('dir-echo', { text: 'hi' }, { onProgress: (e) => events.push(e) });

    expect(out.result).toEqual({ echo: { text: 'hi' } });
    expect(out.cost).toEqual({ baseUnits: 5_000_000n, usdc: '0.5', usd: 0.5 });
    expect(out.escrowId).toMatch(/^C[A-Z2-7]{55}$/);
    expect(out.releaseTx).toMatch(/^[0-9a-f]{64}$/);
    expect(out.explorerUrl).toContain(out.releaseTx);
    const { fee, net } = splitFee(5_000_000n);
    expect(fee).toBe(250_000n);
    expect(world.usdcOf(payer.publicKey)).toBe(before.payer - 5_000_000n);
    expect(world.usdcOf(service.owner.publicKey)).toBe(before.owner + net);
    expect(world.usdcOf(world.treasury.publicKey)).toBe(before.treasury + fee);

    expect(out.trace.steps.map((s) => [s.step, s.status])).toEqual([
      ['quote', 'ok'],
      ['deploy', 'ok'],
      ['fund', 'ok'],
      ['call', 'ok'],
      ['settled', 'ok'],
    ]);
    expect(events.filter((e) => e.phase === 'done').map((e) => e.step)).toEqual(['quote', 'deploy', 'fund', 'call', 'settled']);
    expect(events.find((e) => e.step === 'fund' && e.phase === 'done')?.txHash).toMatch(/^[0-9a-f]{64}$/);

    const escrow = await world.client(payer).getEscrow(out.escrowId!);
    expect(escrow).toMatchObject({
      engagementId: out.quoteId,
      flags: { released: true, disputed: false, resolved: false },
      roles: {
        receiver: service.owner.publicKey,
        approver: service.owner.publicKey,
        disputeResolver: world.treasury.publicKey,
        platformAddress: world.treasury.publicKey,
      },
    });
    const stored = JSON.parse(await readFile(service.servedStorePath, 'utf8')) as { escrows: Record<string, { status: string; releaseTx?: string }> };
    expect(stored.escrows[out.escrowId!]).toMatchObject({ status: 'released', releaseTx: out.releaseTx });
  });

  it('serves an escrow presented twice at the same time once', async () => {
    let served = 0;
    // The handler serving one presentation answers only once the other has been answered: the two overlap for sure.
    let otherAnswered!: () => void;
    const answered = new Promise<void>((r) => (otherAnswered = r));
    const service = await world.publish('dir-twice', {
      handler: async (payload) => {
        served += 1;
        await answered;
        return { echo: payload };
      },
    });
    const payer = await world.party(10n * USDC);
    const ownerBefore = world.usdcOf(service.owner.publicKey);
    let second: Promise<Awaited<ReturnType<typeof post>>> | undefined;
    const out = await world
      .client(payer)
      .call(
        'dir-twice',
        { n: 1 },
        {
          onProgress: (e) => {
            if (e.step === 'call' && e.phase === 'start' && e.escrowId)
              second = post(service.endpoint, { n: 1 }, { [X402_HEADERS.payment]: e.escrowId }).finally(otherAnswered);
          },
        },
      )
      .catch((err: unknown) => {
        otherAnswered();
        return err;
      });
    const other = await second!;
    const outcomes = [out instanceof ClientError ? (out.data.status as number) : 200, other.status].sort();
    expect(outcomes).toEqual([200, 409]);
    expect(served).toBe(1);
    expect(world.usdcOf(service.owner.publicKey)).toBe(ownerBefore + splitFee(5_000_000n).net);
  });

  it('never serves an escrow again after the handler failed, also after a provider restart on the same store', async () => {
    let served = 0;
    const service = await world.publish('dir-restart', {
      handler: () => {
        served += 1;
        throw new Error('upstream model unavailable');
      },
    });
    const payer = await world.party(10n * USDC);
    const client = world.client(payer);
    const err = await failure(client.call('dir-restart', { q: 1 }));
    expect(err.code).toBe('SERVICE');
    expect(err.message).toContain('upstream model unavailable');
    const escrowId = err.data.escrowId!;
    expect(escrowId).toMatch(/^C/);
    expect(await client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { released: false } });

    const url = await service.restart(() => {
      served += 1;
      return { ok: true };
    });
    const again = await post(url, { q: 1 }, { [X402_HEADERS.payment]: escrowId });
    expect(again.status).toBe(409);
    expect(again.json?.error).toMatch(/already presented.*upstream model unavailable.*dispute/);
    const retried = await failure(client.call({ service: 'dir-restart', endpoint: url }, { q: 1 }, { escrowId }));
    expect(retried.code).toBe('PAYMENT_REFUSED');
    expect(served).toBe(1);
    expect(await client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { released: false } });
    const stored = JSON.parse(await readFile(service.servedStorePath, 'utf8')) as { escrows: Record<string, { status: string }> };
    expect(stored.escrows[escrowId]?.status).toBe('abandoned');
  });

  it('refuses an escrow funded for another service with "escrow receiver does not match"', async () => {
    const cheap = await world.publish('dir-cheap', { price: '0.1' });
    let served = 0;
    const target = await world.publish('dir-target', {
      handler: () => {
        served += 1;
        return 'x';
      },
    });
    const payer = await world.party(10n * USDC);
    const quote = await quoteOf(cheap.endpoint, {});
    const escrowId = await openEscrow(world, payer, { receiver: cheap.owner.publicKey, engagementId: quote.quoteId, amount: 5_000_000n });

    const res = await post(
      target.endpoint,
      {},
      { [X402_HEADERS.payment]: encodePaymentHeader({ escrowId, network: 'stellar:local', quoteId: quote.quoteId }) },
    );
    expect(res.status).toBe(402);
    expect(res.json?.error).toBe('escrow receiver does not match');
    expect((res.json?.accepts as Array<{ payTo: string }> | undefined)?.[0]?.payTo).toBe(target.owner.publicKey);
    expect(served).toBe(0);
  });

  it('refuses an underfunded escrow with 402 and the quote for this payload, never at the floor price', async () => {
    let served = 0;
    const service = await world.publish('dir-words', {
      price: '0.01',
      priceFn: (p) => (Array.isArray((p as { words?: unknown }).words) ? (p as { words: unknown[] }).words.length * 0.01 : 0.01),
      handler: (p) => {
        served += 1;
        return p;
      },
    });
    const payer = await world.party(10n * USDC);
    const small = await quoteOf(service.endpoint, { words: ['a'] });
    expect(small.amount).toBe(100_000n);
    const escrowId = await openEscrow(world, payer, { receiver: service.owner.publicKey, engagementId: small.quoteId, amount: small.amount });

    const big = { words: ['a', 'b', 'c', 'd', 'e'] };
    const res = await post(service.endpoint, big, {
      [X402_HEADERS.payment]: encodePaymentHeader({ escrowId, network: 'stellar:local', quoteId: small.quoteId }),
    });
    expect(res.status).toBe(402);
    expect(res.json?.error).toMatch(/holds 0\.01 USDC, this payload costs 0\.05 USDC/);
    expect((res.json?.accepts as Array<{ maxAmountRequired: string }> | undefined)?.[0]?.maxAmountRequired).toBe('500000');
    expect(served).toBe(0);

    // The refusal claimed nothing: the same escrow still pays for the payload it was quoted for.
    const ok = await post(service.endpoint, { words: ['a'] }, { [X402_HEADERS.payment]: escrowId });
    expect(ok.status).toBe(200);
    expect(served).toBe(1);
  });

  it('accepts a bare escrow id bound to the quote through its engagementId, and answers with the release receipt', async () => {
    const service = await world.publish('dir-bare');
    const payer = await world.party(10n * USDC);
    const quote = await quoteOf(service.endpoint, { a: 1 });
    const escrowId = await openEscrow(world, payer, { receiver: service.owner.publicKey, engagementId: quote.quoteId, amount: quote.amount });
    const ownerBefore = world.usdcOf(service.owner.publicKey);

    const res = await post(service.endpoint, { a: 1 }, { [X402_HEADERS.payment]: escrowId });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ echo: { a: 1 } });
    const receipt = decodePaymentResponse(res.headers.get(X402_HEADERS.paymentResponse)!);
    expect(receipt).toMatchObject({ success: true, network: 'stellar:local', payer: payer.publicKey });
    expect(receipt.transaction).toMatch(/^[0-9a-f]{64}$/);
    expect(world.usdcOf(service.owner.publicKey)).toBe(ownerBefore + splitFee(quote.amount).net);

    const replay = await post(service.endpoint, { a: 1 }, { [X402_HEADERS.payment]: escrowId });
    expect(replay.status).toBe(409);
  });

  it('refuses an escrow that answers no quote of this service, or whose roles keep the owner from releasing it', async () => {
    const service = await world.publish('dir-unbound');
    const payer = await world.party(10n * USDC);
    const unbound = await openEscrow(world, payer, { receiver: service.owner.publicKey, engagementId: 'q_madeup.notamac', amount: 5_000_000n });
    const res = await post(service.endpoint, {}, { [X402_HEADERS.payment]: unbound });
    expect(res.status).toBe(402);
    expect(res.json?.error).toMatch(/does not answer a quote issued by this service/);

    const quote = await quoteOf(service.endpoint, {});
    const locked = await openEscrow(world, payer, {
      receiver: service.owner.publicKey,
      engagementId: quote.quoteId,
      amount: 5_000_000n,
      roles: { approver: payer.publicKey },
    });
    const res2 = await post(service.endpoint, {}, { [X402_HEADERS.payment]: locked });
    expect(res2.status).toBe(402);
    expect(res2.json?.error).toMatch(/as approver/);

    const feeless = await openEscrow(world, payer, {
      receiver: service.owner.publicKey,
      engagementId: quote.quoteId,
      amount: 5_000_000n,
      roles: { platformAddress: payer.publicKey },
    });
    const res3 = await post(service.endpoint, {}, { [X402_HEADERS.payment]: feeless });
    expect(res3.status).toBe(402);
    expect(res3.json?.error).toMatch(/as platformAddress/);
  });

  it('refuses to pay a quote whose payTo is not the registry owner, before any escrow exists', async () => {
    const real = await world.publish('dir-real');
    const squatter = await world.party();
    await world.publish('dir-proxy', { owner: squatter, registerOnly: true, registerEndpoint: real.endpoint });
    const payer = await world.party(10n * USDC);
    const before = world.usdcOf(payer.publicKey);
    const err = await failure(world.client(payer).call('dir-proxy', {}));
    expect(err.code).toBe('PAYTO_MISMATCH');
    expect(err.message).toContain(real.owner.publicKey);
    expect(err.data.escrowId).toBeUndefined();
    expect(world.usdcOf(payer.publicKey)).toBe(before);
  });

  it('refuses a quote above maxCost without paying', async () => {
    await world.publish('dir-pricey', { price: '2' });
    const payer = await world.party(10n * USDC);
    const err = await failure(world.client(payer).call('dir-pricey', {}, { maxCost: 1 }));
    expect(err.code).toBe('PRICE_LIMIT');
    expect(world.usdcOf(payer.publicKey)).toBe(10n * USDC);
  });

  it('with verifyEndpoint, throws EndpointVerificationError when the manifest disagrees with the registry, and pays nothing', async () => {
    const real = await world.publish('dir-genuine');
    const impostor = await world.party();
    await world.publish('dir-impostor', { owner: impostor, registerOnly: true, registerEndpoint: real.endpoint });
    const payer = await world.party(10n * USDC);
    const client = world.client(payer, { verifyEndpoint: true });

    const err = await failure(client.call('dir-impostor', {}));
    expect(err).toBeInstanceOf(EndpointVerificationError);
    expect(err.code).toBe('ENDPOINT_VERIFICATION');
    expect(err.message).toContain('serves "dir-genuine"');
    expect(world.usdcOf(payer.publicKey)).toBe(10n * USDC);

    await expect(client.verifyEndpoint('dir-genuine')).resolves.toEqual({ service: 'dir-genuine', ownerWallet: real.owner.publicKey, endpoint: real.endpoint });
    const out = await client.call('dir-genuine', { ok: true });
    expect(out.result).toEqual({ echo: { ok: true } });
  });

  it('dispute() goes through the platform: without a gateway URL it says so and nothing changes on chain', async () => {
    const service = await world.publish('dir-dispute', {
      handler: () => {
        throw new Error('down');
      },
    });
    const payer = await world.party(10n * USDC);
    const client = world.client(payer);
    const failed = await failure(client.call('dir-dispute', {}));
    const escrowId = failed.data.escrowId!;
    // Trustless Work lets only a party of the escrow dispute it; the caller is none, so the platform (dispute resolver) does it.
    const err = await failure(client.dispute(escrowId));
    expect(err.code).toBe('CONFIG');
    expect(err.message).toMatch(/gatewayUrl/);
    expect(await client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { disputed: false } });
    await expect(client.dispute('not-an-escrow')).rejects.toThrow(/C\.\.\. contract id/);
    expect(service.owner.publicKey).not.toBe(payer.publicKey);
  });

  it('reads the quote first and refuses a service that takes no direct payment: no escrow deployed, not a base unit moved', async () => {
    let served = 0;
    // Escrow off (no escrow API key), platform-signed calls on: paid through the gateway only.
    await world.publish('dir-gateway-only', {
      extra: { trustlessWork: {}, platform: { publicKey: world.treasury.publicKey } },
      handler: () => {
        served += 1;
        return 'x';
      },
    });
    const payer = await world.party(10n * USDC);
    const contracts = world.devnet.stats().contracts.length;
    const events: ProgressEvent[] = [];

    const err = await failure(world.client(payer).call('dir-gateway-only', { hi: 1 }, { onProgress: (e) => events.push(e) }));

    expect(err.code).toBe('NO_DIRECT_PAYMENT');
    expect(err.message).toBe('dir-gateway-only takes no direct payment: it is paid through the gateway only; nothing was paid');
    expect(err.data).toMatchObject({ service: 'dir-gateway-only', payments: ['platform'] });
    expect(err.data.escrowId).toBeUndefined();
    expect(events.map((e) => `${e.step}:${e.phase}`)).toEqual(['quote:start', 'quote:failed']);
    expect(world.usdcOf(payer.publicKey)).toBe(10n * USDC);
    expect(world.devnet.stats().contracts.length).toBe(contracts);
    expect(served).toBe(0);
  });

  it('names the funded escrow and the way back when the service refuses it after funding, and the escrow still holds the money', async () => {
    // A price that changes between the quote and the paid call (priceFn must be deterministic: this one is not).
    let quotes = 0;
    await world.publish('dir-reprices', { price: '0.5', priceFn: () => (quotes++ === 0 ? '0.5' : '1') });
    const payer = await world.party(10n * USDC);
    const client = world.client(payer);

    const err = await failure(client.call('dir-reprices', {}));

    expect(err.code).toBe('PAYMENT_REFUSED');
    const escrowId = err.data.escrowId!;
    expect(escrowId).toMatch(/^C[A-Z2-7]{55}$/);
    expect(err.data).toMatchObject({
      status: 402,
      lockedBaseUnits: '5000000',
      reason: `the service refused escrow ${escrowId}: escrow ${escrowId} holds 0.5 USDC, this payload costs 1 USDC: fund it with at least the quoted amount`,
    });
    expect(err.message).toContain(
      `escrow ${escrowId} still holds 0.5 USDC: get it back with a dispute, client.dispute('${escrowId}') or \`farebox dispute ${escrowId} --keypair <payer key file>\``,
    );
    expect(world.usdcOf(payer.publicKey)).toBe(10n * USDC - 5_000_000n);
    expect(await client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { released: false } });
  });

  it('reports a service missing from the registry as NOT_FOUND', async () => {
    const payer = await world.party();
    const err = await failure(world.client(payer).call('dir-nobody-here', {}));
    expect(err.code).toBe('NOT_FOUND');
  });
});

describe('an explicit escrow verifier', () => {
  it('keeps a served escrow whose release failed, and releasePending() pays it out later, once', async () => {
    const secret = newSecret();
    const signer = keypairSigner(secret);
    const accounts = createAccounts(world.devnet.network);
    await accounts.fund(signer.publicKey); // no USDC trustline yet: the release transfer fails
    const owner = Object.assign(signer, { secret });
    const verifier = createEscrowVerifier({
      escrow: world.escrow,
      signer: owner,
      servedStore: new MemoryServedEscrowStore(),
      network: 'stellar:local',
      platformAddress: world.treasury.publicKey,
      asset: { contractId: world.devnet.network.usdc.contractId, issuer: world.devnet.network.usdc.issuer },
    });
    const service = await world.publish('dir-late', { owner, extra: { escrowVerifier: verifier } });
    const payer = await world.party(10n * USDC);

    const out = await world.client(payer).call('dir-late', { n: 1 });
    expect(out.result).toEqual({ echo: { n: 1 } });
    expect(out.releaseTx).toBeUndefined();
    expect(await world.client(payer).getEscrow(out.escrowId!)).toMatchObject({ balance: 5_000_000n, flags: { released: false } });
    const again = await post(service.endpoint, { n: 1 }, { [X402_HEADERS.payment]: out.escrowId! });
    expect(again.status).toBe(409);

    await accounts.ensureUsdcTrustline(owner);
    const [done, ...rest] = await verifier.releasePending();
    expect(rest).toEqual([]);
    expect(done).toMatchObject({ escrowId: out.escrowId, ok: true });
    expect(world.usdcOf(owner.publicKey)).toBe(splitFee(5_000_000n).net);
    expect(await verifier.releasePending()).toEqual([]);
  });
});

describe('the default escrow verifier of the provider', () => {
  it('records served escrows next to the keypair file when no servedStorePath is given', async () => {
    const dir = await world.tempDir();
    const owner = await world.party();
    const { writeFile } = await import('node:fs/promises');
    await writeFile(`${dir}/keypair`, `${owner.secret}\n`, { mode: 0o600 });
    const { createProvider } = await import('@farebox/provider');
    const provider = createProvider({
      service: 'dir-keyfile',
      pricePerCall: '0.2',
      network: 'local',
      devnetUrl: world.devnet.url,
      wallet: { keypairPath: `${dir}/keypair` },
      trustlessWork: { apiKey: 'k', platformAddress: world.treasury.publicKey },
      env: {},
    });
    expect(provider.config.escrow).toMatchObject({ enabled: true, baseUrl: `${world.devnet.url}/escrow`, servedStorePath: `${dir}/served-escrows.json` });
    expect(provider.manifest().payments).toEqual(['escrow']);
    await provider.close();
  });
});
