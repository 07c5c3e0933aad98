// The one-way payment channel (stellar-experimental/one-way-channel) hosted by the devnet,
// driven by a stock Stellar SDK client through the devnet's RPC.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Account,
  Address,
  BASE_FEE,
  Contract,
  Keypair,
  nativeToScVal,
  rpc,
  scValToNative,
  TransactionBuilder,
  xdr,
  authorizeEntry,
} from '@stellar/stellar-sdk';
import { channelAddress, commitmentBytes, createAccounts, keypairSigner } from '@farebox/stellar';
import { CHANNEL_WASM_HASH, LOCAL_CHANNEL_FACTORY_ID, startDevnet, type Devnet } from '@farebox/devnet';

let devnet: Devnet;
let server: rpc.Server;
let passphrase: string;
let usdc: string;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'farebox-channel-'));
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', dataDir });
  server = new rpc.Server(devnet.network.rpcUrl, { allowHttp: true });
  passphrase = devnet.network.passphrase;
  usdc = devnet.network.usdc.contractId;
});
afterAll(async () => {
  await devnet?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** A funded account with a USDC trustline and `amount` base units of USDC. */
async function party(amount = 0n): Promise<Keypair> {
  const kp = Keypair.random();
  const accounts = createAccounts(devnet.network);
  await accounts.fund(kp.publicKey());
  await accounts.ensureUsdcTrustline(keypairSigner(kp.secret()));
  if (amount > 0n) await devnet.mintUsdc(kp.publicKey(), amount);
  return kp;
}

const usdcOf = (g: string) => devnet.chain.accounts.get(g)?.usdc?.balance ?? 0n;
const i128 = (v: bigint) => nativeToScVal(v, { type: 'i128' });
const bytes = (b: Uint8Array) => xdr.ScVal.scvBytes(Buffer.from(b));

/** A commitment key (ed25519, node:crypto) and its raw 32-byte public key. */
function commitmentKey(): { privateKey: KeyObject; raw: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, raw: publicKey.export({ format: 'der', type: 'spki' }).subarray(-32) };
}
const signCommitment = (key: KeyObject, channel: string, amount: bigint) => sign(null, commitmentBytes(channel, amount, passphrase), key);

/** Simulates a read-only call: its return value, or the simulation's error. */
async function simulate(contractId: string, fn: string, ...args: xdr.ScVal[]): Promise<{ retval?: xdr.ScVal; error?: string }> {
  const tx = new TransactionBuilder(new Account(Keypair.random().publicKey(), '0'), { fee: BASE_FEE, networkPassphrase: passphrase })
    .addOperation(new Contract(contractId).call(fn, ...args))
    .setTimeout(60)
    .build();
  const sim = await server.simulateTransaction(tx);
  if (rpc.Api.isSimulationError(sim)) return { error: sim.error.split('\n')[0] };
  return { retval: sim.result!.retval };
}
async function read(contractId: string, fn: string, ...args: xdr.ScVal[]): Promise<unknown> {
  const r = await simulate(contractId, fn, ...args);
  if (r.error) throw new Error(r.error);
  return scValToNative(r.retval!);
}
const errorOf = async (contractId: string, fn: string, ...args: xdr.ScVal[]) => (await simulate(contractId, fn, ...args)).error;

/** Submits a call from `source` as the stock client does (prepare, sign, send, get). */
async function submit(source: Keypair, contractId: string, fn: string, ...args: xdr.ScVal[]) {
  const tx = new TransactionBuilder(await server.getAccount(source.publicKey()), { fee: BASE_FEE, networkPassphrase: passphrase })
    .addOperation(new Contract(contractId).call(fn, ...args))
    .setTimeout(60)
    .build();
  const prepared = await server.prepareTransaction(tx);
  prepared.sign(source);
  return send(prepared);
}
async function send(tx: Parameters<rpc.Server['sendTransaction']>[0]) {
  const sent = await server.sendTransaction(tx);
  expect(sent.status).toBe('PENDING');
  const got = await server.pollTransaction(sent.hash, { attempts: 20 });
  if (got.status === 'NOT_FOUND') throw new Error('transaction not found');
  return got;
}
async function call(source: Keypair, contractId: string, fn: string, ...args: xdr.ScVal[]) {
  const got = await submit(source, contractId, fn, ...args);
  expect(got.status).toBe('SUCCESS');
  return got as rpc.Api.GetSuccessfulTransactionResponse;
}

/** The channel's events since `startLedger`, as [topic, data]. */
async function events(channel: string, startLedger: number): Promise<Array<[string, Record<string, unknown>]>> {
  const r = await server.getEvents({ startLedger, filters: [{ type: 'contract', contractIds: [channel] }] });
  return r.events.map((e) => [scValToNative(e.topic[0]!) as string, scValToNative(e.value) as Record<string, unknown>]);
}

interface Opened {
  channel: string;
  funder: Keypair;
  recipient: Keypair;
  key: KeyObject;
  rawKey: Buffer;
  ledger: number;
}

async function open(deposit: bigint, period = 5, funderUsdc = 1_000_000_000n): Promise<Opened> {
  const funder = await party(funderUsdc);
  const recipient = await party();
  const { privateKey, raw } = commitmentKey();
  const salt = randomBytes(32);
  const expected = channelAddress(LOCAL_CHANNEL_FACTORY_ID, salt, passphrase);
  const got = await call(
    funder,
    LOCAL_CHANNEL_FACTORY_ID,
    'open',
    bytes(salt),
    new Address(usdc).toScVal(),
    new Address(funder.publicKey()).toScVal(),
    bytes(raw),
    new Address(recipient.publicKey()).toScVal(),
    i128(deposit),
    xdr.ScVal.scvU32(period),
  );
  expect(scValToNative(got.returnValue!)).toBe(expected);
  return { channel: expected, funder, recipient, key: privateKey, rawKey: raw, ledger: got.ledger };
}

describe('one-way payment channel on the devnet', () => {
  it('the factory answers its admin and wasm hash', async () => {
    expect(await read(LOCAL_CHANNEL_FACTORY_ID, 'wasm_hash')).toEqual(CHANNEL_WASM_HASH);
    expect(await read(LOCAL_CHANNEL_FACTORY_ID, 'admin')).toMatch(/^G[A-Z2-7]{55}$/);
  });

  it('opens through the factory at the derived address with a deposit, tops up and settles signed commitments', async () => {
    const { channel, funder, recipient, key, rawKey, ledger } = await open(300_000_000n, 17);
    const F = funder.publicKey();
    const R = recipient.publicKey();
    expect(usdcOf(F)).toBe(700_000_000n);
    expect(await read(channel, 'balance')).toBe(300_000_000n);
    expect(await read(channel, 'deposited')).toBe(300_000_000n);
    expect(await read(channel, 'withdrawn')).toBe(0n);
    expect(await read(channel, 'token')).toBe(usdc);
    expect(await read(channel, 'from')).toBe(F);
    expect(await read(channel, 'to')).toBe(R);
    expect(await read(channel, 'refund_waiting_period')).toBe(17);
    expect(await events(channel, ledger)).toEqual([
      ['open', { amount: 300_000_000n, commitment_key: rawKey, from: F, refund_waiting_period: 17, to: R, token: usdc }],
    ]);

    await call(funder, channel, 'top_up', i128(50_000_000n));
    expect(usdcOf(F)).toBe(650_000_000n);
    expect(await read(channel, 'balance')).toBe(350_000_000n);

    // prepare_commitment (by simulation) is commitmentBytes, byte for byte.
    const prepared = await read(channel, 'prepare_commitment', i128(12_345n));
    expect(Buffer.from(prepared as Buffer)).toEqual(commitmentBytes(channel, 12_345n, passphrase));
    expect(await errorOf(channel, 'prepare_commitment', i128(-1n))).toBe('HostError: Error(Contract, #1)');

    // The recipient settles a signed commitment: exactly the payout moves.
    const s1 = await call(recipient, channel, 'settle', i128(120_000_000n), bytes(signCommitment(key, channel, 120_000_000n)));
    expect(usdcOf(R)).toBe(120_000_000n);
    expect(await read(channel, 'withdrawn')).toBe(120_000_000n);
    expect(await read(channel, 'balance')).toBe(230_000_000n);
    expect(await read(channel, 'deposited')).toBe(350_000_000n);
    expect((await events(channel, s1.ledger)).filter(([t]) => t === 'withdraw')).toEqual([['withdraw', { amount: 120_000_000n, to: R }]]);

    // A lower or equal commitment settles nothing.
    for (const amount of [100_000_000n, 120_000_000n]) {
      const s = await call(recipient, channel, 'settle', i128(amount), bytes(signCommitment(key, channel, amount)));
      expect(await events(channel, s.ledger)).toEqual([]);
    }
    expect(usdcOf(R)).toBe(120_000_000n);
    expect(await read(channel, 'withdrawn')).toBe(120_000_000n);

    // A higher one pays the difference.
    const s2 = await call(recipient, channel, 'settle', i128(150_000_000n), bytes(signCommitment(key, channel, 150_000_000n)));
    expect(usdcOf(R)).toBe(150_000_000n);
    expect(await events(channel, s2.ledger)).toEqual([['withdraw', { amount: 30_000_000n, to: R }]]);

    // Another key's signature fails the host's crypto check; so does a signature over another amount.
    const other = commitmentKey().privateKey;
    expect(await errorOf(channel, 'settle', i128(200_000_000n), bytes(signCommitment(other, channel, 200_000_000n)))).toBe(
      'HostError: Error(Crypto, InvalidInput)',
    );
    expect(await errorOf(channel, 'settle', i128(200_000_000n), bytes(signCommitment(key, channel, 199_999_999n)))).toBe(
      'HostError: Error(Crypto, InvalidInput)',
    );

    // Someone other than `to` submits a valid commitment: the recipient's auth is missing, the network refuses it.
    const failed = await submit(funder, channel, 'settle', i128(200_000_000n), bytes(signCommitment(key, channel, 200_000_000n)));
    expect(failed.status).toBe('FAILED');
    expect(usdcOf(R)).toBe(150_000_000n);

    // close: the rest of the commitment to the recipient, the remaining balance back to the funder at once.
    const c = await call(recipient, channel, 'close', i128(180_000_000n), bytes(signCommitment(key, channel, 180_000_000n)));
    expect(usdcOf(R)).toBe(180_000_000n);
    expect(usdcOf(F)).toBe(650_000_000n + 170_000_000n);
    expect(await read(channel, 'balance')).toBe(0n);
    expect(await read(channel, 'deposited')).toBe(180_000_000n);
    expect(await events(channel, c.ledger)).toEqual([
      ['withdraw', { amount: 30_000_000n, to: R }],
      ['close', { effective_at_ledger: c.ledger }],
      ['refund', { amount: 170_000_000n, from: F }],
    ]);

    // Closed: close_start answers AlreadyClosed.
    expect(await errorOf(channel, 'close_start')).toBe('HostError: Error(Contract, #4)');
  });

  it('close_start, then refund only after the waiting period; the recipient can still settle before', async () => {
    const { channel, funder, recipient, key } = await open(100_000_000n, 5);
    const F = funder.publicKey();
    const R = recipient.publicKey();
    expect(await errorOf(channel, 'refund')).toBe('HostError: Error(Contract, #2)');

    const first = await call(funder, channel, 'close_start');
    expect(await events(channel, first.ledger)).toEqual([['close', { effective_at_ledger: first.ledger + 5 }]]);
    devnet.closeLedger();
    // Again before it is effective: the waiting period starts over.
    const cs = await call(funder, channel, 'close_start');
    const effective = cs.ledger + 5;
    expect(effective).toBeGreaterThan(first.ledger + 5);
    expect(await events(channel, cs.ledger)).toEqual([['close', { effective_at_ledger: effective }]]);

    // A stock client reads CloseEffectiveAtLedger from the instance's storage through getLedgerEntries.
    const instanceKey = xdr.LedgerKey.contractData(
      new xdr.LedgerKeyContractData({
        contract: new Address(channel).toScAddress(),
        key: xdr.ScVal.scvLedgerKeyContractInstance(),
        durability: xdr.ContractDataDurability.persistent(),
      }),
    );
    const entries = await server.getLedgerEntries(instanceKey);
    const storage = entries.entries[0]!.val.contractData().val().instance().storage() ?? [];
    const closeKey = xdr.ScVal.scvVec([xdr.ScVal.scvSymbol('CloseEffectiveAtLedger')]).toXDR('base64');
    const stored = storage.find((e) => e.key().toXDR('base64') === closeKey);
    expect(stored?.val().u32()).toBe(effective);
    expect(storage.map((e) => scValToNative(e.key())[0])).toEqual(['CloseEffectiveAtLedger', 'CommitmentKey', 'From', 'RefundWaitingPeriod', 'To', 'Token']);

    // Too early for the funder; the recipient settles meanwhile.
    expect(await errorOf(channel, 'refund')).toBe('HostError: Error(Contract, #3)');
    await call(recipient, channel, 'settle', i128(40_000_000n), bytes(signCommitment(key, channel, 40_000_000n)));
    expect(usdcOf(R)).toBe(40_000_000n);
    expect(await errorOf(channel, 'refund')).toBe('HostError: Error(Contract, #3)');

    // The waiting period passes (ledgers close on demand; a simulation runs in the next ledger).
    while ((await server.getLatestLedger()).sequence + 1 < effective) devnet.closeLedger();
    const r = await call(funder, channel, 'refund');
    expect(r.ledger).toBe(effective);
    expect(usdcOf(F)).toBe(1_000_000_000n - 40_000_000n);
    expect(await read(channel, 'balance')).toBe(0n);
    expect(await events(channel, r.ledger)).toEqual([['refund', { amount: 60_000_000n, from: F }]]);
    expect(await errorOf(channel, 'close_start')).toBe('HostError: Error(Contract, #4)');
  });

  it('a channel survives a restart on the same data directory', async () => {
    const { channel, recipient, key } = await open(20_000_000n, 3);
    await devnet.close();
    devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', dataDir });
    server = new rpc.Server(devnet.network.rpcUrl, { allowHttp: true });
    expect(await read(channel, 'balance')).toBe(20_000_000n);
    await call(recipient, channel, 'settle', i128(5_000_000n), bytes(signCommitment(key, channel, 5_000_000n)));
    expect(usdcOf(recipient.publicKey())).toBe(5_000_000n);
    expect(await read(channel, 'withdrawn')).toBe(5_000_000n);
  });

  // The funder's one signed auth entry covers the asset transfer inside the channel's constructor as well.
  it('a sponsor submits the open with the funder’s signed auth entry', async () => {
    const sponsor = await party();
    const funder = await party(10_000_000n);
    const recipient = await party();
    const { raw } = commitmentKey();
    const salt = randomBytes(32);
    const tx = new TransactionBuilder(await server.getAccount(sponsor.publicKey()), { fee: BASE_FEE, networkPassphrase: passphrase })
      .addOperation(
        new Contract(LOCAL_CHANNEL_FACTORY_ID).call(
          'open',
          bytes(salt),
          new Address(usdc).toScVal(),
          new Address(funder.publicKey()).toScVal(),
          bytes(raw),
          new Address(recipient.publicKey()).toScVal(),
          i128(10_000_000n),
          xdr.ScVal.scvU32(10),
        ),
      )
      .setTimeout(60)
      .build();
    const sim = await server.simulateTransaction(tx);
    if (rpc.Api.isSimulationError(sim)) throw new Error(sim.error);
    const latest = (await server.getLatestLedger()).sequence;
    const auth = await Promise.all(sim.result!.auth.map((e) => authorizeEntry(e, funder, latest + 20, passphrase)));
    const assembled = rpc.assembleTransaction(tx, { ...sim, result: { ...sim.result!, auth } }).build();
    assembled.sign(sponsor);
    const got = await send(assembled);
    expect(got.status).toBe('SUCCESS');
    const channel = channelAddress(LOCAL_CHANNEL_FACTORY_ID, salt, passphrase);
    expect(await read(channel, 'balance')).toBe(10_000_000n);
    expect(usdcOf(funder.publicKey())).toBe(0n);
  });
});
