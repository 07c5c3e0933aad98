// The devnet stands in for Stellar testnet for x402's `exact` scheme: the stock
// @x402/stellar client and facilitator, unmodified, pay and settle against it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Account, Address, Keypair, MuxedAccount, Operation, rpc, scValToNative, type Transaction, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme as ExactClient } from '@x402/stellar/exact/client';
import { ExactStellarScheme as ExactFacilitator } from '@x402/stellar/exact/facilitator';
import { createAccounts, keypairSigner, TESTNET_PASSPHRASE } from '@farebox/stellar';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { testTls } from '@farebox/test-kit';

const USDC = 10_000_000n;
let devnet: Devnet;

/** A funded account with a USDC trustline and `usdc` base units, through the devnet's own friendbot. */
async function party(usdc = 0n): Promise<Keypair> {
  const kp = Keypair.random();
  const accounts = createAccounts(devnet.network);
  await accounts.fund(kp.publicKey());
  await accounts.ensureUsdcTrustline(keypairSigner(kp.secret()));
  if (usdc > 0n) await devnet.friendbot(kp.publicKey(), usdc);
  return kp;
}

const usdcOf = (g: string) => devnet.chain.accounts.get(g)?.usdc?.balance ?? 0n;
const xlmOf = (g: string) => devnet.chain.accounts.get(g)?.balance ?? 0n;

/** The devnet's simulation error for a payload's transaction, as the facilitator's re-simulation meets it. */
async function simulationError(transaction: string): Promise<string> {
  const sim = await new rpc.Server(devnet.rpcUrl).simulateTransaction(TransactionBuilder.fromXDR(transaction, TESTNET_PASSPHRASE));
  return rpc.Api.isSimulationError(sim) ? sim.error.split('\n')[0]! : 'no error';
}

function requirements(payTo: string, amount: bigint, maxTimeoutSeconds = 60) {
  return {
    scheme: 'exact',
    network: 'stellar:testnet' as const,
    asset: devnet.network.usdc.contractId,
    amount: amount.toString(),
    payTo,
    maxTimeoutSeconds,
    extra: { areFeesSponsored: true },
  };
}

type Requirements = ReturnType<typeof requirements>;

/** The stock client's payment payload, as an x402 v2 client sends it (with the requirements it accepted). */
async function pay(payer: Keypair, req: Requirements) {
  const client = new ExactClient(createEd25519Signer(payer.secret(), 'stellar:testnet'), { url: devnet.rpcUrl });
  const partial = await client.createPaymentPayload(2, req);
  return { ...partial, accepted: req, resource: { url: 'https://service.test/echo', description: 'echo', mimeType: 'application/json' } };
}

let facilitatorKp: Keypair;
let facilitator: ExactFacilitator;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', passphrase: 'testnet', tls: testTls() });
  facilitatorKp = await party();
  facilitator = new ExactFacilitator([createEd25519Signer(facilitatorKp.secret(), 'stellar:testnet')], { rpcConfig: { url: devnet.rpcUrl } });
});
afterAll(async () => {
  await devnet?.close();
});

describe('x402 exact on a devnet standing in for testnet', () => {
  it('the stock client pays and the stock facilitator verifies and settles: only the USDC moves, the fee is sponsored', async () => {
    expect(devnet.network.x402Network).toBe('stellar:testnet');
    const payer = await party(10n * USDC);
    const payee = await party();
    const req = requirements(payee.publicKey(), 1_250_000n);
    const payload = await pay(payer, req);

    const before = { payerUsdc: usdcOf(payer.publicKey()), payeeUsdc: usdcOf(payee.publicKey()), payerXlm: xlmOf(payer.publicKey()) };
    const facilitatorXlm = xlmOf(facilitatorKp.publicKey());
    expect(await facilitator.verify(payload, req)).toEqual({ isValid: true, payer: payer.publicKey() });
    const settled = await facilitator.settle(payload, req);
    expect(settled).toEqual({ success: true, transaction: expect.stringMatching(/^[0-9a-f]{64}$/), network: 'stellar:testnet', payer: payer.publicKey() });

    expect(usdcOf(payer.publicKey())).toBe(before.payerUsdc - 1_250_000n);
    expect(usdcOf(payee.publicKey())).toBe(before.payeeUsdc + 1_250_000n);
    expect(xlmOf(payer.publicKey())).toBe(before.payerXlm);
    // The facilitator paid the fee: under the library's default maximum of 50,000 stroops plus the resource fee.
    const fee = facilitatorXlm - xlmOf(facilitatorKp.publicKey());
    expect(fee).toBeGreaterThan(0n);
    expect(fee).toBeLessThan(100_000n);

    const tx = await new rpc.Server(devnet.rpcUrl).getTransaction(settled.transaction);
    if (tx.status !== 'SUCCESS') throw new Error(`settlement ${settled.transaction} is ${tx.status}`);
    // The transfer event the Stellar Asset Contract emits, readable as on testnet.
    const events = await new rpc.Server(devnet.rpcUrl).getEvents({ startLedger: tx.ledger, filters: [{ contractIds: [req.asset] }] });
    expect(events.events.filter((e) => e.txHash === settled.transaction).map((e) => e.topic[0]?.sym().toString())).toEqual(['transfer']);
  });

  it('pays a muxed payee (M...) as testnet does (CAP-67): its account is credited, the event names the account and carries the id; the stock verify refuses it', async () => {
    const payer = await party(USDC);
    const payee = await party();
    const muxed = new MuxedAccount(new Account(payee.publicKey(), '0'), '4242').accountId();
    const req = requirements(muxed, 2_000n);
    const payload = await pay(payer, req);
    const tx = TransactionBuilder.fromXDR(payload.payload.transaction as string, TESTNET_PASSPHRASE);
    const sim = await new rpc.Server(devnet.rpcUrl).simulateTransaction(tx);
    if (!rpc.Api.isSimulationSuccess(sim)) throw new Error(`simulation failed: ${JSON.stringify(sim)}`);
    const body = sim.events[0]!.event().body().v0();
    expect(Address.fromScVal(body.topics()[2]!).toString()).toBe(payee.publicKey());
    expect(scValToNative(body.data())).toEqual({ amount: 2_000n, to_muxed_id: 4242n });
    // @x402/stellar 2.9 compares the event's `to` with payTo and its data with the amount: a muxed payee is refused.
    expect(await facilitator.verify(payload, req)).toEqual({
      isValid: false,
      invalidReason: 'invalid_exact_stellar_payload_event_wrong_to',
      payer: payer.publicKey(),
    });
    // Submitted as is, the transfer credits the account behind the muxed address.
    const before = usdcOf(payee.publicKey());
    const account = await new rpc.Server(devnet.rpcUrl).getAccount(facilitatorKp.publicKey());
    const op = (tx as Transaction).operations[0] as Operation.InvokeHostFunction;
    const rebuilt = new TransactionBuilder(account, { fee: tx.fee, networkPassphrase: TESTNET_PASSPHRASE, sorobanData: sim.transactionData.build() })
      .addOperation(Operation.invokeHostFunction({ func: op.func, auth: op.auth ?? [] }))
      .setTimeout(60)
      .build();
    rebuilt.sign(facilitatorKp);
    const sent = await new rpc.Server(devnet.rpcUrl).sendTransaction(rebuilt);
    expect((await new rpc.Server(devnet.rpcUrl).pollTransaction(sent.hash)).status).toBe('SUCCESS');
    expect(usdcOf(payee.publicKey())).toBe(before + 2_000n);
  });

  it('simulates the unsigned transfer as testnet does: address-credential auth for the payer, one transfer event, a fee under the maximum', async () => {
    const payer = await party(USDC);
    const payee = await party();
    const req = requirements(payee.publicKey(), 1_000n);
    const payload = await pay(payer, req);
    const tx = TransactionBuilder.fromXDR(payload.payload.transaction as string, TESTNET_PASSPHRASE);
    // The stock client's fee is its inclusion fee plus the simulated resource fee.
    expect(Number(tx.fee)).toBeLessThan(50_000);
    const sim = await new rpc.Server(devnet.rpcUrl).simulateTransaction(tx);
    if (!rpc.Api.isSimulationSuccess(sim)) throw new Error(`simulation failed: ${JSON.stringify(sim)}`);
    expect(Number(sim.minResourceFee)).toBe(16_500);
    expect(sim.events.map((e) => [e.event().type().name, e.event().body().v0().topics()[0]?.sym().toString()])).toEqual([['contract', 'transfer']]);
    // The signed entry is kept as given: an address credential for the payer, signed, expiring ceil(60 / 5) = 12 ledgers ahead.
    const auth = sim.result?.auth ?? [];
    expect(auth).toHaveLength(1);
    const creds = auth[0]!.credentials();
    expect(creds.switch()).toBe(xdr.SorobanCredentialsType.sorobanCredentialsAddress());
    expect(creds.address().signature().switch().name).toBe('scvVec');
    expect(creds.address().signatureExpirationLedger()).toBeGreaterThanOrEqual(devnet.chain.latest.seq + 11);
  });

  it('sponsors the fee with a fee-bump account: neither the payer nor the inner source pays it', async () => {
    const payer = await party(5n * USDC);
    const payee = await party();
    const bump = await party();
    const bumped = new ExactFacilitator([createEd25519Signer(facilitatorKp.secret(), 'stellar:testnet')], {
      rpcConfig: { url: devnet.rpcUrl },
      feeBumpSigner: createEd25519Signer(bump.secret(), 'stellar:testnet'),
    });
    const req = requirements(payee.publicKey(), 2n * USDC);
    const payload = await pay(payer, req);
    const xlm = { payer: xlmOf(payer.publicKey()), inner: xlmOf(facilitatorKp.publicKey()), bump: xlmOf(bump.publicKey()) };
    const settled = await bumped.settle(payload, req);
    expect(settled.success).toBe(true);
    expect(usdcOf(payee.publicKey())).toBe(2n * USDC);
    expect(xlmOf(payer.publicKey())).toBe(xlm.payer);
    expect(xlmOf(facilitatorKp.publicKey())).toBe(xlm.inner);
    expect(xlmOf(bump.publicKey())).toBeLessThan(xlm.bump);
    const tx = await new rpc.Server(devnet.rpcUrl).getTransaction(settled.transaction);
    if (tx.status !== 'SUCCESS') throw new Error(`settlement ${settled.transaction} is ${tx.status}`);
    expect(tx.feeBump).toBe(true);
  });

  it('refuses a replayed payload: the second settlement fails and moves nothing', async () => {
    const payer = await party(5n * USDC);
    const payee = await party();
    const req = requirements(payee.publicKey(), USDC);
    const payload = await pay(payer, req);
    expect((await facilitator.settle(payload, req)).success).toBe(true);
    const after = { payer: usdcOf(payer.publicKey()), payee: usdcOf(payee.publicKey()), facilitator: xlmOf(facilitatorKp.publicKey()) };

    const again = await facilitator.settle(payload, req);
    expect(again).toMatchObject({ success: false, errorReason: 'invalid_exact_stellar_payload_simulation_failed', payer: payer.publicKey() });
    // As on testnet, the payer's nonce is used up.
    expect(await simulationError(payload.payload.transaction as string)).toBe('HostError: Error(Auth, ExistingValue)');
    expect({ payer: usdcOf(payer.publicKey()), payee: usdcOf(payee.publicKey()), facilitator: xlmOf(facilitatorKp.publicKey()) }).toEqual(after);
  });

  it('refuses a tampered amount and another payee with the library reasons, moving nothing', async () => {
    const payer = await party(5n * USDC);
    const payee = await party();
    const other = await party();
    const req = requirements(payee.publicKey(), USDC);
    const payload = await pay(payer, req);
    const before = usdcOf(payer.publicKey());

    const moreAsked = requirements(payee.publicKey(), 2n * USDC);
    expect(await facilitator.verify({ ...payload, accepted: moreAsked }, moreAsked)).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_stellar_payload_wrong_amount',
    });
    const elsewhere = requirements(other.publicKey(), USDC);
    expect(await facilitator.settle({ ...payload, accepted: elsewhere }, elsewhere)).toMatchObject({
      success: false,
      errorReason: 'invalid_exact_stellar_payload_wrong_recipient',
    });
    // A transaction whose signed amount was changed afterwards: the signature no longer covers it.
    const tx = TransactionBuilder.fromXDR(payload.payload.transaction as string, TESTNET_PASSPHRASE);
    const env = tx.toEnvelope();
    const op = env.v1().tx().operations()[0]!.body().invokeHostFunctionOp();
    const args = op.hostFunction().invokeContract().args();
    args[2] = xdr.ScVal.scvI128(new xdr.Int128Parts({ hi: xdr.Int64.fromString('0'), lo: xdr.Uint64.fromString((2n * USDC).toString()) }));
    const tampered = { ...payload, accepted: moreAsked, payload: { transaction: env.toXDR('base64') } };
    expect(await facilitator.settle(tampered, moreAsked)).toMatchObject({ success: false, errorReason: 'invalid_exact_stellar_payload_simulation_failed' });
    expect(await simulationError(env.toXDR('base64'))).toBe('HostError: Error(Auth, InvalidAction)');

    expect(usdcOf(payer.publicKey())).toBe(before);
    expect(usdcOf(payee.publicKey())).toBe(0n);
    expect(usdcOf(other.publicKey())).toBe(0n);
  });

  it('refuses an expired authorization once its ledger has passed, without waiting for it', async () => {
    const payer = await party(5n * USDC);
    const payee = await party();
    // maxTimeoutSeconds 10: the client signs for ceil(10 / 5) = 2 ledgers; close 3 more.
    const req = requirements(payee.publicKey(), USDC, 10);
    const payload = await pay(payer, req);
    expect((await facilitator.verify(payload, req)).isValid).toBe(true);
    for (let i = 0; i < 3; i++) devnet.closeLedger();

    expect(await facilitator.settle(payload, req)).toMatchObject({ success: false, errorReason: 'invalid_exact_stellar_payload_simulation_failed' });
    expect(await simulationError(payload.payload.transaction as string)).toBe('HostError: Error(Auth, InvalidInput)');
    expect(usdcOf(payer.publicKey())).toBe(5n * USDC);
    expect(usdcOf(payee.publicKey())).toBe(0n);
  });

  it('the chain itself refuses a reused nonce and an expired authorization: the submitted transaction FAILS and moves nothing', async () => {
    const payer = await party(5n * USDC);
    const payee = await party();
    const server = new rpc.Server(devnet.rpcUrl);
    /** What a facilitator submits, without verifying first: the payload's call under its own account, signed. */
    const submit = async (transaction: string) => {
      const client = TransactionBuilder.fromXDR(transaction, TESTNET_PASSPHRASE) as Transaction;
      const data = client.toEnvelope().v1().tx().ext().sorobanData();
      const account = await server.getAccount(facilitatorKp.publicKey());
      const tx = new TransactionBuilder(account, { fee: '10000', networkPassphrase: TESTNET_PASSPHRASE, sorobanData: data })
        .setTimeout(60)
        .addOperation(Operation.invokeHostFunction(client.operations[0] as Operation.InvokeHostFunction))
        .build();
      tx.sign(facilitatorKp);
      const sent = await server.sendTransaction(tx);
      expect(sent.status).toBe('PENDING');
      return (await server.getTransaction(sent.hash)).status;
    };

    const payload = await pay(payer, requirements(payee.publicKey(), USDC));
    expect(await submit(payload.payload.transaction as string)).toBe('SUCCESS');
    expect(await submit(payload.payload.transaction as string)).toBe('FAILED');
    expect(usdcOf(payee.publicKey())).toBe(USDC);

    const late = await pay(payer, requirements(payee.publicKey(), USDC, 5));
    for (let i = 0; i < 2; i++) devnet.closeLedger();
    expect(await submit(late.payload.transaction as string)).toBe('FAILED');
    expect(usdcOf(payer.publicKey())).toBe(4n * USDC);
    expect(usdcOf(payee.publicKey())).toBe(USDC);
  });
});
