import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Address, Asset, BASE_FEE, Contract, Keypair, nativeToScVal, Operation, rpc, scValToNative, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import {
  createAccounts,
  createCatalogMirror,
  createRegistryClient,
  FileCursorStore,
  keypairSigner,
  MemoryCursorStore,
  resultCodesFromXdr,
  StellarError,
  type TxSigner,
} from '@farebox/stellar';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { eventually } from '@farebox/test-kit';

let devnet: Devnet;
let dir: string;

async function funded(usdc = 0n): Promise<TxSigner & { kp: Keypair }> {
  const kp = Keypair.random();
  const accounts = createAccounts(devnet.network);
  await accounts.fund(kp.publicKey());
  const signer = keypairSigner(kp.secret());
  if (usdc > 0n) {
    await accounts.ensureUsdcTrustline(signer);
    await devnet.mintUsdc(kp.publicKey(), usdc);
  }
  return Object.assign(signer, { kp });
}

async function refusal(p: Promise<unknown>): Promise<StellarError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(StellarError);
  return e as StellarError;
}

const agentInput = (service: string) => ({
  service,
  pricePerCall: 1_000_000n,
  endpoint: `https://example.test/${service}`,
  description: `the ${service} service`,
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'farebox-devnet-'));
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
});
afterAll(async () => {
  await devnet?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('registry client against the devnet', () => {
  it('registers, reads, updates and deregisters a service', async () => {
    const owner = await funded();
    const registry = createRegistryClient(devnet.network);
    const { txHash } = await registry.register(owner, agentInput('weather'));
    expect(txHash).toMatch(/^[0-9a-f]{64}$/);
    const agent = await registry.getAgent('weather');
    expect(agent).toMatchObject({
      owner: owner.publicKey,
      service: 'weather',
      pricePerCall: 1_000_000n,
      endpoint: 'https://example.test/weather',
      totalCalls: 0n,
      totalEarned: 0n,
    });
    expect(agent!.createdAt).toBeGreaterThan(1_600_000_000);

    await registry.update(owner, 'weather', { pricePerCall: 2_500_000n, description: 'now with forecasts' });
    expect(await registry.getAgent('weather')).toMatchObject({
      pricePerCall: 2_500_000n,
      description: 'now with forecasts',
      endpoint: 'https://example.test/weather',
    });

    await registry.deregister(owner, 'weather');
    expect(await registry.getAgent('weather')).toBeNull();
  });

  it('refuses an update or deregistration by an account that does not own the service', async () => {
    const owner = await funded();
    const intruder = await funded();
    const registry = createRegistryClient(devnet.network);
    await registry.register(owner, agentInput('owned'));

    expect((await refusal(registry.update(intruder, 'owned', { pricePerCall: 1n }))).code).toBe('UNAUTHORIZED');
    expect((await refusal(registry.deregister(intruder, 'owned'))).code).toBe('UNAUTHORIZED');

    // Submitted anyway (the owner's auth entry left unsigned): the network refuses it.
    const server = new rpc.Server(devnet.network.rpcUrl, { allowHttp: true });
    const source = await server.getAccount(intruder.publicKey);
    const tx = new TransactionBuilder(source, { fee: BASE_FEE, networkPassphrase: devnet.network.passphrase })
      .addOperation(new Contract(devnet.network.registryContractId!).call('deregister_agent', nativeToScVal('owned', { type: 'string' })))
      .setTimeout(60)
      .build();
    const prepared = await server.prepareTransaction(tx);
    prepared.sign(intruder.kp);
    const sent = await server.sendTransaction(prepared);
    expect(sent.status).toBe('PENDING');
    const got = await server.getTransaction(sent.hash);
    expect(got.status).toBe('FAILED');
    expect(resultCodesFromXdr((got as rpc.Api.GetFailedTransactionResponse).resultXdr).operations).toEqual(['function_trapped']);
    expect(await registry.getAgent('owned')).toMatchObject({ owner: owner.publicKey });
  });

  it('refuses names over 32 characters, long endpoints and descriptions, and prices of 0 or less', async () => {
    const owner = await funded();
    const registry = createRegistryClient(devnet.network);
    const cases = [
      { ...agentInput('x'.repeat(33)) },
      { ...agentInput('long-endpoint'), endpoint: `https://e.test/${'a'.repeat(250)}` },
      { ...agentInput('long-description'), description: 'd'.repeat(513) },
      { ...agentInput('free'), pricePerCall: 0n },
      { ...agentInput('negative'), pricePerCall: -5n },
    ];
    for (const input of cases) {
      const e = await refusal(registry.register(owner, input));
      expect(e.code).toBe('INVALID_INPUT');
      expect(e.message).toMatch(/registry refused/);
    }
    // At the limits everything is accepted.
    await registry.register(owner, { service: 's'.repeat(32), pricePerCall: 1n, endpoint: `https://e.test/${'a'.repeat(241)}`, description: 'd'.repeat(512) });
    expect(await registry.getAgent('s'.repeat(32))).not.toBeNull();
  });

  it('refuses a duplicate service name, even from its owner', async () => {
    const owner = await funded();
    const other = await funded();
    const registry = createRegistryClient(devnet.network);
    await registry.register(owner, agentInput('dup'));
    expect((await refusal(registry.register(other, agentInput('dup')))).code).toBe('ALREADY_EXISTS');
    expect((await refusal(registry.register(owner, agentInput('dup')))).code).toBe('ALREADY_EXISTS');
  });

  it('emits the three events with the documented topics through getEvents', async () => {
    const owner = await funded();
    const registry = createRegistryClient(devnet.network);
    const start = (await new rpc.Server(devnet.network.rpcUrl, { allowHttp: true }).getLatestLedger()).sequence;
    await registry.register(owner, agentInput('evented'));
    await registry.update(owner, 'evented', { endpoint: 'https://example.test/v2' });
    await registry.deregister(owner, 'evented');

    const server = new rpc.Server(devnet.network.rpcUrl, { allowHttp: true });
    const res = await server.getEvents({
      startLedger: start,
      filters: [
        {
          type: 'contract',
          contractIds: [devnet.network.registryContractId!],
          topics: [['*', nativeToScVal(owner.publicKey, { type: 'address' }).toXDR('base64')]],
        },
      ],
    });
    const decoded = res.events.map((e) => ({ topics: e.topic.map((t) => scValToNative(t)), value: scValToNative(e.value) }));
    expect(decoded).toHaveLength(3);
    expect(decoded[0]!.topics).toEqual(['agent_registered', owner.publicKey]);
    expect(decoded[0]!.value[0]).toBe('evented');
    expect(decoded[0]!.value[1]).toBe(1_000_000n);
    expect(typeof decoded[0]!.value[2]).toBe('bigint');
    expect(decoded[1]).toEqual({ topics: ['agent_updated', owner.publicKey], value: 'evented' });
    expect(decoded[2]).toEqual({ topics: ['agent_deregistered', owner.publicKey], value: 'evented' });
    expect(res.events[0]!.id).toMatch(/^\d{19}-\d{10}$/);

    const listed = await registry.events({ startLedger: start });
    expect(listed.events.filter((e) => e.service === 'evented').map((e) => e.type)).toEqual(['agent_registered', 'agent_updated', 'agent_deregistered']);
  });

  it('refuses getEvents requests the real server refuses', async () => {
    const call = async (params: unknown) => {
      const r = await fetch(devnet.network.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'getEvents', params }),
      });
      return (await r.json()) as { id: number; error?: { code: number } };
    };
    expect((await call({ startLedger: 0, filters: [] })).error?.code).toBe(-32602);
    expect((await call({ startLedger: 1, pagination: { limit: 10_001 } })).error?.code).toBe(-32602);
    expect((await call({ startLedger: 1, pagination: { cursor: '0000000004294967296-0000000000' } })).error?.code).toBe(-32602);
    expect((await call({ startLedger: 10_000_000 })).error?.code).toBe(-32600);
    expect((await call({ startLedger: 1, filters: [{ topics: [['*', '*', '*', '*', '*']] }] })).error?.code).toBe(-32602);
  });
});

describe('account helpers against the devnet', () => {
  it('funds an account with 10,000 XLM and reports no USDC until a trustline exists', async () => {
    const kp = Keypair.random();
    const accounts = createAccounts(devnet.network);
    expect(await accounts.balances(kp.publicKey())).toEqual({ exists: false, xlm: 0n, usdc: null });
    await accounts.fund(kp.publicKey());
    await accounts.fund(kp.publicKey()); // already funded is fine
    expect(await accounts.balances(kp.publicKey())).toEqual({ exists: true, xlm: 10_000n * 10_000_000n, usdc: null });
    const signer = keypairSigner(kp.secret());
    expect((await accounts.ensureUsdcTrustline(signer)).txHash).toMatch(/^[0-9a-f]{64}$/);
    expect(await accounts.ensureUsdcTrustline(signer)).toEqual({});
    expect((await accounts.balances(kp.publicKey())).usdc).toBe(0n);
  });

  it('pays USDC exactly, and the asset contract sees the same balances', async () => {
    const payer = await funded(25_000_000n);
    const payee = await funded(1n);
    const accounts = createAccounts(devnet.network);
    await accounts.payUsdc(payer, payee.publicKey, 12_345_678n);
    expect((await accounts.balances(payer.publicKey)).usdc).toBe(12_654_322n);
    expect((await accounts.balances(payee.publicKey)).usdc).toBe(12_345_679n);

    const server = new rpc.Server(devnet.network.rpcUrl, { allowHttp: true });
    const sac = new Contract(devnet.network.usdc.contractId);
    const tx = new TransactionBuilder(await server.getAccount(payee.publicKey), { fee: BASE_FEE, networkPassphrase: devnet.network.passphrase })
      .addOperation(
        sac.call('transfer', new Address(payee.publicKey).toScVal(), new Address(payer.publicKey).toScVal(), nativeToScVal(345_679n, { type: 'i128' })),
      )
      .setTimeout(60)
      .build();
    const prepared = await server.prepareTransaction(tx);
    prepared.sign(payee.kp);
    const sent = await server.sendTransaction(prepared);
    const got = await server.getTransaction(sent.hash);
    expect(got.status).toBe('SUCCESS');
    expect((await accounts.balances(payee.publicKey)).usdc).toBe(12_000_000n);
    const events = await server.getEvents({
      startLedger: (got as rpc.Api.GetSuccessfulTransactionResponse).ledger,
      filters: [{ type: 'contract', contractIds: [devnet.network.usdc.contractId] }],
    });
    expect(events.events.at(-1)!.topic.map((t) => scValToNative(t))).toEqual([
      'transfer',
      payee.publicKey,
      payer.publicKey,
      `USDC:${devnet.network.usdc.issuer}`,
    ]);
    expect(scValToNative(events.events.at(-1)!.value)).toBe(345_679n);
  });

  it('fails a USDC payment to an account without a trustline (op_no_trust)', async () => {
    const payer = await funded(10_000_000n);
    const payee = await funded();
    const e = await refusal(createAccounts(devnet.network).payUsdc(payer, payee.publicKey, 1_000_000n));
    expect(e.code).toBe('TX_FAILED');
    expect(e.resultCodes).toEqual({ transaction: 'tx_failed', operations: ['op_no_trust'] });
    expect((await createAccounts(devnet.network).balances(payer.publicKey)).usdc).toBe(10_000_000n);
  });

  it('fails an overdrawn payment (op_underfunded) and moves no money', async () => {
    const payer = await funded(5_000_000n);
    const payee = await funded(1n);
    const accounts = createAccounts(devnet.network);
    const e = await refusal(accounts.payUsdc(payer, payee.publicKey, 5_000_001n));
    expect(e.resultCodes?.operations).toEqual(['op_underfunded']);
    expect((await accounts.balances(payer.publicKey)).usdc).toBe(5_000_000n);
    expect((await accounts.balances(payee.publicKey)).usdc).toBe(1n);
  });

  it('refuses a signed transaction changed after signing (tx_bad_auth)', async () => {
    const payer = await funded(5_000_000n);
    const payee = await funded(1n);
    const server = new rpc.Server(devnet.network.rpcUrl, { allowHttp: true });
    const usdc = new Asset('USDC', devnet.network.usdc.issuer);
    const tx = new TransactionBuilder(await server.getAccount(payer.publicKey), { fee: BASE_FEE, networkPassphrase: devnet.network.passphrase })
      .addOperation(Operation.payment({ destination: payee.publicKey, asset: usdc, amount: '0.1000000' }))
      .setTimeout(60)
      .build();
    tx.sign(payer.kp);
    const env = xdr.TransactionEnvelope.fromXDR(tx.toEnvelope().toXDR('base64'), 'base64');
    env.v1().tx().operations()[0]!.body().paymentOp().amount(xdr.Int64.fromString('4000000'));
    const tampered = TransactionBuilder.fromXDR(env.toXDR('base64'), devnet.network.passphrase);
    const sent = await server.sendTransaction(tampered);
    expect(sent.status).toBe('ERROR');
    expect(resultCodesFromXdr(sent.errorResult!).transaction).toBe('tx_bad_auth');
    expect((await createAccounts(devnet.network).balances(payee.publicKey)).usdc).toBe(1n);
  });

  it('refuses a transaction with the wrong sequence number (tx_bad_seq)', async () => {
    const payer = await funded();
    const server = new rpc.Server(devnet.network.rpcUrl, { allowHttp: true });
    const account = await server.getAccount(payer.publicKey);
    account.incrementSequenceNumber(); // skips one: the network expects seq + 1
    const tx = new TransactionBuilder(account, { fee: BASE_FEE, networkPassphrase: devnet.network.passphrase })
      .addOperation(Operation.payment({ destination: Keypair.random().publicKey(), asset: Asset.native(), amount: '1' }))
      .setTimeout(60)
      .build();
    tx.sign(payer.kp);
    const sent = await server.sendTransaction(tx);
    expect(sent.status).toBe('ERROR');
    expect(resultCodesFromXdr(sent.errorResult!).transaction).toBe('tx_bad_seq');
  });

  it('refuses funding on a network without a friendbot', async () => {
    const e = await refusal(createAccounts({ ...devnet.network, friendbotUrl: undefined } as typeof devnet.network).fund(Keypair.random().publicKey()));
    expect(e.code).toBe('NO_FRIENDBOT');
  });
});

describe('catalog mirror', () => {
  it('sees a new registration by following the registry’s events, and keeps its services through an RPC outage', async () => {
    const dataDir = join(dir, 'mirror-net');
    let net = await startDevnet({ port: 0, closeIntervalMs: 'instant', dataDir });
    const port = net.port;
    const registry = createRegistryClient(net.network);
    const errors: unknown[] = [];
    const mirror = createCatalogMirror({
      registry,
      cursorStore: new MemoryCursorStore(),
      pollIntervalMs: 200,
      maxBackoffMs: 400,
      onError: (e) => errors.push(e),
    });
    await mirror.start();
    await mirror.ready();
    const owner = await (async () => {
      const kp = Keypair.random();
      await createAccounts(net.network).fund(kp.publicKey());
      return keypairSigner(kp.secret());
    })();
    await registry.register(owner, agentInput('mirrored'));
    // No syncOnce(): the mirror's own polling finds it (how fast is the bench's business, not this test's).
    expect(await eventually('the mirror lists the registration', () => mirror.get('mirrored'))).toMatchObject({
      owner: owner.publicKey,
      pricePerCall: 1_000_000n,
    });

    await net.close();
    await eventually('the mirror has tried the closed network and failed', () => errors.length > 0);
    expect(mirror.list().map((a) => a.service)).toEqual(['mirrored']);

    net = await startDevnet({ port, closeIntervalMs: 'instant', dataDir });
    await registry.update(owner, 'mirrored', { pricePerCall: 7n });
    // Back after its backoff (at most 400 ms here), it follows the events again.
    await eventually('the mirror sees the update', () => mirror.get('mirrored')?.pricePerCall === 7n);
    await registry.deregister(owner, 'mirrored');
    await mirror.syncOnce();
    expect(mirror.get('mirrored')).toBeUndefined();
    await mirror.stop();
    await net.close();
  });

  it('resumes from a persisted cursor and still knows services registered before it', async () => {
    const owner = await funded();
    const registry = createRegistryClient(devnet.network);
    await registry.register(owner, agentInput('persisted-cursor'));
    const store = new FileCursorStore(join(dir, 'cursor.json'));
    const first = createCatalogMirror({ registry, cursorStore: store });
    expect(await first.syncOnce()).toBeGreaterThan(0);
    expect(first.get('persisted-cursor')).toBeDefined();

    const second = createCatalogMirror({ registry, cursorStore: new FileCursorStore(join(dir, 'cursor.json')) });
    expect(await second.syncOnce()).toBe(0);
    expect(second.get('persisted-cursor')).toMatchObject({ owner: owner.publicKey });
  });
});

describe('devnet persistence and explorer', () => {
  it('keeps balances and registrations across a restart with a data directory', async () => {
    const dataDir = join(dir, 'persist');
    let net = await startDevnet({ port: 0, closeIntervalMs: 'instant', dataDir });
    const kp = Keypair.random();
    const signer = keypairSigner(kp.secret());
    await createAccounts(net.network).fund(kp.publicKey());
    await createAccounts(net.network).ensureUsdcTrustline(signer);
    await net.mintUsdc(kp.publicKey(), 42n);
    await createRegistryClient(net.network).register(signer, agentInput('survivor'));
    const ledger = net.stats().ledger;
    await net.close();

    net = await startDevnet({ port: 0, closeIntervalMs: 'instant', dataDir });
    expect(net.stats().ledger).toBeGreaterThanOrEqual(ledger);
    expect(await createAccounts(net.network).balances(kp.publicKey())).toMatchObject({ exists: true, usdc: 42n });
    expect(await createRegistryClient(net.network).getAgent('survivor')).toMatchObject({ owner: kp.publicKey() });
    // The sequence number continues: a new transaction from the same account succeeds.
    await createRegistryClient(net.network).update(signer, 'survivor', { description: 'back again' });
    await net.close();
  });

  it('serves explorer pages for a transaction, an account and a contract', async () => {
    const owner = await funded();
    const { txHash } = await createRegistryClient(devnet.network).register(owner, agentInput('explored'));
    const ex = devnet.network.explorer;
    for (const [link, text] of [
      [ex.tx(txHash), 'register_agent'],
      [ex.account(owner.publicKey), owner.publicKey],
      [ex.contract(devnet.network.registryContractId!), 'explored'],
    ] as const) {
      const res = await fetch(link);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(await res.text()).toContain(text);
    }
    expect((await fetch(ex.tx('0'.repeat(64)))).status).toBe(404);
  });
});
