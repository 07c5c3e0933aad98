import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEscrowClient, EscrowError } from '@farebox/escrow';

const PASSPHRASE = 'Standalone Network ; February 2017';
const CID = 'CADQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQOBYHA4DQP5KR';
const G = 'GB5GGNNDDHXUSVAS4V4YZSKTRDLAOSIYXYVKGUAGK2XJFTTGHB5TXFXK';

interface Seen {
  at: number;
  method: string;
  url: string;
  apiKey: string | undefined;
  body: string;
}

const servers: Array<{ close: () => void }> = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function loopback(answer: (req: IncomingMessage, res: ServerResponse, n: number, body: string) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ at: Date.now(), method: req.method ?? '', url: req.url ?? '', apiKey: req.headers['x-api-key'] as string | undefined, body });
      answer(req, res, seen.length, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push({ close: () => server.close() });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

async function failure(p: Promise<unknown>): Promise<EscrowError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(EscrowError);
  return e as EscrowError;
}

const escrowJson = {
  contractId: CID,
  engagementId: 'e1',
  title: 't',
  description: 'd',
  roles: { approver: G, serviceProvider: G, platformAddress: G, releaseSigner: G, disputeResolver: G, receiver: G },
  amount: 10.0000001,
  balance: '0.1',
  platformFee: 5,
  milestones: [{ description: 'm', status: 'pending', approvedFlag: true }],
  flags: { disputed: false, released: false, resolved: false },
  trustline: { address: G, decimals: 10000000 },
  createdAt: { _seconds: 1_700_000_000, _nanoseconds: 0 },
};

/** A clock whose waits take no time: a wait moves it forward by what was asked (and is noted). */
function virtualClock() {
  let t = 1_700_000_000_000;
  const waits: number[] = [];
  return {
    now: () => t,
    sleep: async (ms: number) => {
      waits.push(ms);
      t += ms;
    },
    waits,
  };
}

describe('escrow client behaviour', () => {
  it('never starts more requests than its budget in a window: the 4th of a 3-per-500 ms budget waits for the window', async () => {
    const { url, seen } = await loopback((_req, res) => json(res, 200, []));
    const clock = virtualClock();
    const starts: number[] = [];
    const timed: typeof fetch = (input, init) => {
      starts.push(clock.now());
      return fetch(input, init);
    };
    const client = createEscrowClient({ baseUrl: url, apiKey: 'k', passphrase: PASSPHRASE, budget: { requests: 3, windowMs: 500 }, fetch: timed, clock });
    const began = clock.now();
    await Promise.all(Array.from({ length: 7 }, () => client.getEscrows([CID])));
    const offsets = starts.map((t) => t - began);
    // The first three at once; each later one only once the window holds fewer than three starts.
    expect(offsets.slice(0, 3)).toEqual([0, 0, 0]);
    expect(offsets[3]).toBeGreaterThanOrEqual(500);
    expect(offsets[6]).toBeGreaterThanOrEqual(1000);
    for (let i = 3; i < starts.length; i++) expect(starts[i]! - starts[i - 3]!).toBeGreaterThanOrEqual(500);
    expect(seen).toHaveLength(7);
    expect(seen.every((s) => s.apiKey === 'k')).toBe(true);
  });

  it('backs off on 429 for the Retry-After the provider names, then succeeds', async () => {
    const { url, seen } = await loopback((_req, res, n) =>
      n === 1 ? json(res, 429, { message: 'Too many requests' }, { 'retry-after': '1' }) : json(res, 200, [escrowJson]),
    );
    const clock = virtualClock();
    const client = createEscrowClient({ baseUrl: url, apiKey: 'k', passphrase: PASSPHRASE, clock });
    const [e] = await client.getEscrows([CID]);
    expect(seen).toHaveLength(2);
    // Exactly the second the provider named, between the two requests.
    expect(clock.waits).toEqual([1000]);
    expect(e!.amount).toBe(100_000_001n);
  });

  it('gives up with RATE_LIMITED after maxRetries 429 answers', async () => {
    const { url, seen } = await loopback((_req, res) => json(res, 429, { message: 'slow down' }, { 'retry-after': '0' }));
    const client = createEscrowClient({ baseUrl: url, apiKey: 'k', passphrase: PASSPHRASE, maxRetries: 2 });
    const e = await failure(client.getEscrows([CID]));
    expect(e).toMatchObject({ code: 'RATE_LIMITED', status: 429, providerMessage: 'slow down' });
    expect(seen).toHaveLength(3);
  });

  it('parses both escrow shapes exactly (numbers and strings, approvedFlag, Firestore timestamps)', async () => {
    const { url, seen } = await loopback((_req, res) => json(res, 200, [escrowJson]));
    const client = createEscrowClient({ baseUrl: url, apiKey: 'k', passphrase: PASSPHRASE });
    const [e] = await client.getEscrows([CID, CID]);
    expect(e).toMatchObject({
      amount: 100_000_001n,
      balance: 1_000_000n,
      milestones: [{ approved: true, status: 'pending' }],
      createdAt: '2023-11-14T22:13:20.000Z',
      trustline: { address: G, decimals: 10000000 },
    });
    expect(seen[0]!.url).toBe(`/helper/get-escrow-by-contract-ids?contractIds=${CID}&contractIds=${CID}`);
  });

  it('sends amounts in human units exactly and distributions as [{address, amount}]', async () => {
    const { url, seen } = await loopback((_req, res) => json(res, 200, { status: 'SUCCESS', unsignedTransaction: 'AAAA' }));
    const client = createEscrowClient({ baseUrl: url, apiKey: 'k', passphrase: PASSPHRASE });
    expect(await client.fundEscrow({ contractId: CID, signer: G, amount: 1n })).toBe('AAAA');
    await client.resolveDispute({ contractId: CID, disputeResolver: G, distributions: [{ address: G, amount: 123_456_789_012_345_678n }] });
    expect(JSON.parse(seen[0]!.body)).toEqual({ contractId: CID, signer: G, amount: 0.0000001 });
    expect(seen[0]!.url).toBe('/escrow/single-release/fund-escrow');
    expect(JSON.parse(seen[1]!.body).distributions).toEqual([{ address: G, amount: '12345678901.2345678' }]);
  });

  it('turns an unexpected response shape into BAD_RESPONSE', async () => {
    const { url } = await loopback((req, res) =>
      req.method === 'GET'
        ? json(res, 200, [{ contractId: CID, amount: 'lots' }])
        : req.url?.includes('send')
          ? json(res, 200, { ok: true })
          : json(res, 200, { unsignedTransaction: 42 }),
    );
    const client = createEscrowClient({ baseUrl: url, apiKey: 'k', passphrase: PASSPHRASE });
    expect((await failure(client.getEscrows([CID]))).code).toBe('BAD_RESPONSE');
    expect((await failure(client.releaseFunds({ contractId: CID, releaseSigner: G }))).code).toBe('BAD_RESPONSE');
    expect((await failure(client.sendTransaction('AAAA'))).code).toBe('BAD_RESPONSE');
  });

  it('carries the provider message of a 400 and refuses bad options', async () => {
    const { url } = await loopback((_req, res) => json(res, 400, { message: ['amount must be a number', 'signer must be a string'] }));
    const client = createEscrowClient({ baseUrl: url, apiKey: 'k', passphrase: PASSPHRASE });
    const e = await failure(client.disputeEscrow({ contractId: CID, signer: G }));
    expect(e).toMatchObject({ code: 'HTTP', status: 400, providerMessage: 'amount must be a number; signer must be a string' });
    expect(() => createEscrowClient({ baseUrl: url, apiKey: '', passphrase: PASSPHRASE })).toThrow(EscrowError);
    expect(() => createEscrowClient({ baseUrl: 'ftp://x', apiKey: 'k', passphrase: PASSPHRASE })).toThrow(/baseUrl/);
  });
});
