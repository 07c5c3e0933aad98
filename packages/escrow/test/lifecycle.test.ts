import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair, xdr } from '@stellar/stellar-sdk';
import { createAccounts, keypairSigner, LOCAL_USDC_ISSUER, type TxSigner } from '@farebox/stellar';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { createEscrowClient, EscrowError, type EscrowClient, type EscrowRoles } from '@farebox/escrow';

const USDC = 10_000_000n;
let devnet: Devnet;
let escrow: EscrowClient;

type Party = TxSigner & { kp: Keypair };

async function party(devnetRef: Devnet, usdc = 0n, trustline = true): Promise<Party> {
  const kp = Keypair.random();
  const accounts = createAccounts(devnetRef.network);
  await accounts.fund(kp.publicKey());
  const signer = keypairSigner(kp.secret());
  if (trustline) await accounts.ensureUsdcTrustline(signer);
  if (usdc > 0n) await devnetRef.mintUsdc(kp.publicKey(), usdc);
  return Object.assign(signer, { kp });
}

const usdcOf = (d: Devnet, id: string) => d.chain.accounts.get(id)?.usdc?.balance ?? 0n;

async function failure(p: Promise<unknown>): Promise<EscrowError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(EscrowError);
  return e as EscrowError;
}

interface Cast {
  funder: Party;
  provider: Party;
  receiver: Party;
  platform: Party;
  releaser: Party;
  resolver: Party;
  roles: EscrowRoles;
}

async function cast(d: Devnet, funding: bigint): Promise<Cast> {
  const [funder, provider, receiver, platform, releaser, resolver] = await Promise.all([party(d, funding), party(d), party(d), party(d), party(d), party(d)]);
  return {
    funder: funder!,
    provider: provider!,
    receiver: receiver!,
    platform: platform!,
    releaser: releaser!,
    resolver: resolver!,
    roles: {
      approver: funder!.publicKey,
      serviceProvider: provider!.publicKey,
      platformAddress: platform!.publicKey,
      releaseSigner: releaser!.publicKey,
      disputeResolver: resolver!.publicKey,
      receiver: receiver!.publicKey,
    },
  };
}

const deployInput = (roles: EscrowRoles, amount: bigint, engagementId = `eng-${Math.random().toString(36).slice(2)}`) => ({
  engagementId,
  title: 'Settlement cycle',
  description: 'calls of one publisher',
  roles,
  amount,
  platformFee: 5,
  milestones: [{ description: 'calls served' }],
  trustline: { address: LOCAL_USDC_ISSUER, symbol: 'USDC' },
});

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', escrow: { rateLimit: false } });
  escrow = createEscrowClient({
    baseUrl: `${devnet.url}/escrow`,
    apiKey: 'test-key',
    passphrase: devnet.network.passphrase,
    budget: { requests: 10_000, windowMs: 1000 },
  });
});
afterAll(async () => {
  await devnet?.close();
});

describe('single-release escrow on the devnet through the client', () => {
  it('deploys, funds, approves and releases: the receiver gets the amount less floor(5%), the platform the fee, the escrow keeps 0', async () => {
    const amount = 100_000_001n; // 10.0000001 USDC: the fee 5000000.05 rounds down
    const c = await cast(devnet, 20n * USDC);
    const deployed = await escrow.deployAndSend(deployInput(c.roles, amount), c.funder);
    expect(deployed.contractId).toMatch(/^C[A-Z2-7]{55}$/);
    expect(deployed.txHash).toMatch(/^[0-9a-f]{64}$/);
    expect(deployed.escrow?.amount).toBe(amount);
    expect(devnet.chain.contracts.has(deployed.contractId)).toBe(true);
    const { contractId } = deployed;

    await escrow.run('fundEscrow', { contractId, signer: c.funder.publicKey, amount }, c.funder);
    expect(usdcOf(devnet, c.funder.publicKey)).toBe(20n * USDC - amount);
    let [e] = await escrow.getEscrows([contractId]);
    expect(e!.balance).toBe(amount);
    expect(e!.flags).toEqual({ disputed: false, released: false, resolved: false });

    await escrow.run(
      'changeMilestoneStatus',
      { contractId, milestoneIndex: '0', newStatus: 'completed', newEvidence: 'batch 1', serviceProvider: c.provider.publicKey },
      c.provider,
    );
    await escrow.run('approveMilestone', { contractId, milestoneIndex: '0', approver: c.funder.publicKey }, c.funder);
    const released = await escrow.run('releaseFunds', { contractId, releaseSigner: c.releaser.publicKey }, c.releaser);
    expect(released.txHash).toMatch(/^[0-9a-f]{64}$/);

    expect(usdcOf(devnet, c.platform.publicKey)).toBe(5_000_000n);
    expect(usdcOf(devnet, c.receiver.publicKey)).toBe(amount - 5_000_000n);
    [e] = await escrow.getEscrows([contractId]);
    expect(e).toMatchObject({
      balance: 0n,
      flags: { released: true, disputed: false, resolved: false },
      platformFee: 5,
      engagementId: expect.stringMatching(/^eng-/),
    });
    expect(e!.milestones).toEqual([{ description: 'calls served', status: 'completed', evidence: 'batch 1', approved: true }]);

    // the explorer shows the escrow's events
    const page = await (await fetch(`${devnet.url}/explorer/local/contract/${contractId}`)).text();
    expect(page).toContain('tw_release');
    expect(page).toContain('tw_fund');
  });

  it('refuses a release by anyone but the release signer, and a second release, with the provider messages', async () => {
    const c = await cast(devnet, 10n * USDC);
    const { contractId } = await escrow.deployAndSend(deployInput(c.roles, 5n * USDC), c.funder);
    await escrow.run('fundEscrow', { contractId, signer: c.funder.publicKey, amount: 5n * USDC }, c.funder);
    await escrow.run('approveMilestone', { contractId, milestoneIndex: '0', approver: c.funder.publicKey }, c.funder);

    const wrong = await failure(escrow.releaseFunds({ contractId, releaseSigner: c.receiver.publicKey }));
    expect(wrong.code).toBe('HTTP');
    expect(wrong.status).toBe(400);
    expect(wrong.providerMessage).toBe('Only the release signer can release the escrow earnings');

    await escrow.run('releaseFunds', { contractId, releaseSigner: c.releaser.publicKey }, c.releaser);
    const twice = await failure(escrow.run('releaseFunds', { contractId, releaseSigner: c.releaser.publicKey }, c.releaser));
    expect(twice.providerMessage).toBe('The escrow funds have been released');
    expect(usdcOf(devnet, c.receiver.publicKey)).toBe(4_750_000_0n);
  });

  it('refuses to release before the milestone is approved, and funding beyond the signer balance', async () => {
    const c = await cast(devnet, 2n * USDC);
    const { contractId } = await escrow.deployAndSend(deployInput(c.roles, 2n * USDC), c.funder);
    const under = await failure(escrow.fundEscrow({ contractId, signer: c.funder.publicKey, amount: 3n * USDC }));
    expect(under.providerMessage).toBe('The signer does not have enough USDC to fund the escrow');
    await escrow.run('fundEscrow', { contractId, signer: c.funder.publicKey, amount: 2n * USDC }, c.funder);
    const early = await failure(escrow.releaseFunds({ contractId, releaseSigner: c.releaser.publicKey }));
    expect(early.providerMessage).toBe('All milestones must be approved before releasing the funds');
    const notApprover = await failure(escrow.approveMilestone({ contractId, milestoneIndex: '0', approver: c.provider.publicKey }));
    expect(notApprover.providerMessage).toBe('Only the approver can approve milestones');
    expect(usdcOf(devnet, c.funder.publicKey)).toBe(0n);
  });

  it('disputes and resolves with a split that sums exactly to the balance, refusing a wrong sum', async () => {
    const c = await cast(devnet, 10n * USDC);
    const { contractId } = await escrow.deployAndSend(deployInput(c.roles, 7n * USDC), c.funder);
    await escrow.run('fundEscrow', { contractId, signer: c.funder.publicKey, amount: 7n * USDC }, c.funder);

    const outsider = await failure(escrow.disputeEscrow({ contractId, signer: c.resolver.publicKey }));
    expect(outsider.status).toBe(400);
    await escrow.run('disputeEscrow', { contractId, signer: c.receiver.publicKey }, c.receiver);
    let [e] = await escrow.getEscrows([contractId]);
    expect(e!.flags.disputed).toBe(true);
    const blocked = await failure(escrow.releaseFunds({ contractId, releaseSigner: c.releaser.publicKey }));
    expect(blocked.providerMessage).toBe('The escrow is in dispute');

    const wrongSum = await failure(
      escrow.resolveDispute({
        contractId,
        disputeResolver: c.resolver.publicKey,
        distributions: [
          { address: c.receiver.publicKey, amount: 4n * USDC },
          { address: c.funder.publicKey, amount: 2n * USDC },
        ],
      }),
    );
    expect(wrongSum.providerMessage).toMatch(/^The sum of the distributions must equal the escrow balance: the distributions sum to 6 but the balance is 7$/);
    const notResolver = await failure(
      escrow.resolveDispute({ contractId, disputeResolver: c.funder.publicKey, distributions: [{ address: c.funder.publicKey, amount: 7n * USDC }] }),
    );
    expect(notResolver.providerMessage).toBe('Only the dispute resolver can execute this function');

    await escrow.run(
      'resolveDispute',
      {
        contractId,
        disputeResolver: c.resolver.publicKey,
        distributions: [
          { address: c.receiver.publicKey, amount: 4n * USDC + 1n },
          { address: c.funder.publicKey, amount: 3n * USDC - 1n },
        ],
      },
      c.resolver,
    );
    expect(usdcOf(devnet, c.receiver.publicKey)).toBe(4n * USDC + 1n);
    expect(usdcOf(devnet, c.funder.publicKey)).toBe(6n * USDC - 1n);
    [e] = await escrow.getEscrows([contractId]);
    expect(e).toMatchObject({ balance: 0n, flags: { disputed: false, resolved: true, released: false } });
  });

  it('withdraws the remaining funds of a disputed escrow to the dispute resolver only', async () => {
    const c = await cast(devnet, 3n * USDC);
    const { contractId } = await escrow.deployAndSend(deployInput(c.roles, 3n * USDC), c.funder);
    await escrow.run('fundEscrow', { contractId, signer: c.funder.publicKey, amount: 3n * USDC }, c.funder);
    const tooEarly = await failure(escrow.withdrawRemainingFunds({ contractId, disputeResolver: c.resolver.publicKey }));
    expect(tooEarly.providerMessage).toBe('The escrow must be released, resolved or in dispute to withdraw the remaining funds');
    await escrow.run('disputeEscrow', { contractId, signer: c.funder.publicKey }, c.funder);
    const notResolver = await failure(escrow.withdrawRemainingFunds({ contractId, disputeResolver: c.funder.publicKey }));
    expect(notResolver.providerMessage).toBe('Only the dispute resolver can execute this function');
    await escrow.run('withdrawRemainingFunds', { contractId, disputeResolver: c.resolver.publicKey }, c.resolver);
    expect(usdcOf(devnet, c.resolver.publicKey)).toBe(3n * USDC);
    const [e] = await escrow.getEscrows([contractId]);
    expect(e!.balance).toBe(0n);
  });

  it('gets several escrows by id (repeated and bracketed query forms) and reports an unknown one as not found', async () => {
    const c = await cast(devnet, USDC);
    const a = await escrow.deployAndSend(deployInput(c.roles, USDC, 'eng-a'), c.funder);
    const b = await escrow.deployAndSend(deployInput(c.roles, 2n * USDC, 'eng-a'), c.funder);
    expect(a.contractId).not.toBe(b.contractId);
    const got = await escrow.getEscrows([a.contractId, b.contractId]);
    expect(got.map((e) => [e.contractId, e.amount])).toEqual([
      [a.contractId, USDC],
      [b.contractId, 2n * USDC],
    ]);
    const res = await fetch(`${devnet.url}/escrow/helper/get-escrow-by-contract-ids?contractIds[]=${a.contractId}`, { headers: { 'x-api-key': 'k' } });
    expect(((await res.json()) as Array<{ amount: number }>)[0]!.amount).toBe(1);
    const unknown = await failure(
      escrow.fundEscrow({ contractId: 'CADQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQP5KR', signer: c.funder.publicKey, amount: USDC }),
    );
    expect(unknown.code).toBe('NOT_FOUND');
    expect(unknown.providerMessage).toBe('Escrow not found');
  });

  it('accepts the /v1 paths and the tuple form of distributions', async () => {
    const c = await cast(devnet, 2n * USDC);
    const { contractId } = await escrow.deployAndSend(deployInput(c.roles, 2n * USDC), c.funder);
    const post = (path: string, body: unknown) =>
      fetch(`${devnet.url}/escrow${path}`, { method: 'POST', headers: { 'x-api-key': 'k', 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const fund = await post('/escrow/single-release/v1/fund-escrow', { contractId, signer: c.funder.publicKey, amount: '2' });
    const { unsignedTransaction } = (await fund.json()) as { unsignedTransaction: string };
    expect((await escrow.sendTransaction(await c.funder.signTransaction(unsignedTransaction, devnet.network.passphrase))).status).toBe('SUCCESS');
    await escrow.run('disputeEscrow', { contractId, signer: c.provider.publicKey }, c.provider);
    const res = await post('/escrow/single-release/resolve-dispute', {
      contractId,
      disputeResolver: c.resolver.publicKey,
      distributions: [
        [c.receiver.publicKey, '1.5'],
        [c.funder.publicKey, 0.5],
      ],
    });
    expect(res.status).toBe(200);
    const tx = ((await res.json()) as { unsignedTransaction: string }).unsignedTransaction;
    await escrow.sendTransaction(await c.resolver.signTransaction(tx, devnet.network.passphrase));
    expect(usdcOf(devnet, c.receiver.publicKey)).toBe(15_000_000n);
    expect(usdcOf(devnet, c.funder.publicKey)).toBe(5_000_000n);
  });

  it('refuses a signed transaction altered after signing (the chain checks the signature), and nothing moves', async () => {
    const c = await cast(devnet, 2n * USDC);
    const { contractId } = await escrow.deployAndSend(deployInput(c.roles, USDC), c.funder);
    const unsigned = await escrow.fundEscrow({ contractId, signer: c.funder.publicKey, amount: USDC });
    const signed = await c.funder.signTransaction(unsigned, devnet.network.passphrase);
    const env = xdr.TransactionEnvelope.fromXDR(signed, 'base64');
    env
      .v1()
      .tx()
      .fee(env.v1().tx().fee() + 1);
    const sent = await escrow.sendTransaction(env.toXDR('base64'));
    expect(sent.status).toBe('FAILED');
    expect(sent.message).toMatch(/tx_bad_auth/);
    expect(usdcOf(devnet, c.funder.publicKey)).toBe(2n * USDC);
    const run = await failure(escrow.run('fundEscrow', { contractId, signer: c.funder.publicKey, amount: USDC }, c.receiver));
    expect(run.code).toBe('FAILED');
    expect(run.providerMessage).toMatch(/tx_bad_auth/);
  });

  it('validates deploy bodies with clear messages', async () => {
    const c = await cast(devnet, 0n);
    const zero = await failure(escrow.deploySingleRelease({ ...deployInput(c.roles, USDC), signer: c.funder.publicKey, milestones: [] }));
    expect(zero.providerMessage).toBe('milestones: at least one milestone is required');
    const fee = await failure(escrow.deploySingleRelease({ ...deployInput(c.roles, USDC), signer: c.funder.publicKey, platformFee: 100 }));
    expect(fee.providerMessage).toMatch(/^platformFee: must be a percentage between 0 and 99/);
    const badAmount = await failure(escrow.deploySingleRelease({ ...deployInput(c.roles, 0n), signer: c.funder.publicKey }));
    expect(badAmount.code).toBe('CONFIG');
  });
});

describe('devnet escrow API access rules', () => {
  it('answers 401 without x-api-key, and 429 with Retry-After past its per-key limit', async () => {
    const d = await startDevnet({ port: 0, closeIntervalMs: 'instant', escrow: { rateLimit: { requests: 3, windowMs: 60_000 } } });
    try {
      const url = `${d.url}/escrow/helper/get-escrow-by-contract-ids?contractIds=CADQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQP5KR`;
      const anon = await fetch(url);
      expect(anon.status).toBe(401);
      expect(((await anon.json()) as { message: string }).message).toMatch(/x-api-key/);
      for (let i = 0; i < 3; i++) expect((await fetch(url, { headers: { 'x-api-key': 'a' } })).status).toBe(200);
      const limited = await fetch(url, { headers: { 'x-api-key': 'a' } });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
      expect((await fetch(url, { headers: { 'x-api-key': 'b' } })).status).toBe(200);
      const client = createEscrowClient({ baseUrl: `${d.url}/escrow`, apiKey: 'a', passphrase: d.network.passphrase, maxRetries: 0 });
      const e = await failure(client.getEscrows(['CADQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQP5KR']));
      expect(e.code).toBe('RATE_LIMITED');
    } finally {
      await d.close();
    }
  });

  it('keeps escrows and their balances across a restart on the same data directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-escrow-'));
    try {
      let d = await startDevnet({ port: 0, closeIntervalMs: 'instant', dataDir: dir, escrow: { rateLimit: false } });
      let client = createEscrowClient({ baseUrl: `${d.url}/escrow`, apiKey: 'k', passphrase: d.network.passphrase });
      const c = await cast(d, 3n * USDC);
      const { contractId } = await client.deployAndSend(deployInput(c.roles, 3n * USDC), c.funder);
      await client.run('fundEscrow', { contractId, signer: c.funder.publicKey, amount: 3n * USDC }, c.funder);
      await client.run('approveMilestone', { contractId, milestoneIndex: '0', approver: c.funder.publicKey }, c.funder);
      await d.close();

      d = await startDevnet({ port: 0, closeIntervalMs: 'instant', dataDir: dir, escrow: { rateLimit: false } });
      client = createEscrowClient({ baseUrl: `${d.url}/escrow`, apiKey: 'k', passphrase: d.network.passphrase });
      const [e] = await client.getEscrows([contractId]);
      expect(e).toMatchObject({ balance: 3n * USDC, milestones: [{ approved: true }] });
      await client.run('releaseFunds', { contractId, releaseSigner: c.releaser.publicKey }, c.releaser);
      expect(usdcOf(d, c.receiver.publicKey)).toBe(2_850_000_0n);
      await d.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
