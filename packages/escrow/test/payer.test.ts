import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPaymentRequired, encodeStrKey, randomBytes } from '@farebox/protocol';
import { keypairSigner, resolveNetwork } from '@farebox/stellar';
import { createEscrowPayer, EscrowPaymentError, type EscrowClient, type ProgressEvent } from '@farebox/escrow';

// The payer's refusals before any money moves, against a loopback service.
// Paid calls (deploy, fund, call, release, the refusals after funding) run on
// the devnet with real provider-SDK services in @farebox/client's direct
// tests and the gateway's wallet-path tests, the payer's two users.
const network = resolveNetwork({ network: 'local', devnetUrl: 'http://127.0.0.1:9', env: {} });
const owner = keypairSigner(encodeStrKey('secretSeed', randomBytes(32))).publicKey;
const stranger = keypairSigner(encodeStrKey('secretSeed', randomBytes(32))).publicKey;
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A service that answers every request with `status` and `quote`'s 402 (or a plain body). */
async function service(status: number, quote?: Parameters<typeof buildPaymentRequired>[0]): Promise<{ endpoint: string; requests: () => number }> {
  let n = 0;
  const server = createServer((req, res) => {
    n++;
    req.resume();
    req.on('end', () => {
      if (quote) {
        const { body, headers } = buildPaymentRequired(quote);
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      } else {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: true }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, requests: () => n };
}

const quote = (endpoint: string, over: Partial<Parameters<typeof buildPaymentRequired>[0]> = {}) => ({
  resource: endpoint,
  description: 'echo',
  amount: 100_000n,
  payTo: owner,
  network: network.x402Network,
  asset: `USDC:${network.usdc.issuer}`,
  extra: { quoteId: 'q-1', service: 'echo' },
  ...over,
});

function payer() {
  let escrowAsked = 0;
  const p = createEscrowPayer({
    network,
    signer: keypairSigner(encodeStrKey('secretSeed', randomBytes(32))),
    escrow: () => {
      escrowAsked++;
      return {} as EscrowClient;
    },
    platformAddress: stranger,
    timeoutMs: 5_000,
  });
  return { pay: p.pay, escrowAsked: () => escrowAsked };
}

async function refusal(p: Promise<unknown>): Promise<EscrowPaymentError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EscrowPaymentError);
  return err as EscrowPaymentError;
}

describe('the escrow payer refuses before any escrow exists', () => {
  it('a quote above maxCost (PRICE_LIMIT), with the failed quote step in its trace and progress', async () => {
    const svc = await service(402, quote(''));
    const events: ProgressEvent[] = [];
    const p = payer();
    const err = await refusal(p.pay({ service: 'echo', endpoint: svc.endpoint, owner }, '{}', { maxCost: 99_999n, onProgress: (e) => events.push(e) }));
    expect(err.code).toBe('PRICE_LIMIT');
    expect(err.message).toMatch(/above maxCost.*nothing was paid/);
    expect(err.data.trace?.steps).toEqual([expect.objectContaining({ step: 'quote', status: 'failed' })]);
    expect(events.map((e) => `${e.step} ${e.phase}`)).toEqual(['quote start', 'quote failed']);
    expect(p.escrowAsked()).toBe(0);
  });

  it('a quote that pays someone else than the owner (PAYTO_MISMATCH)', async () => {
    const svc = await service(402, quote('', { payTo: stranger }));
    const p = payer();
    expect((await refusal(p.pay({ service: 'echo', endpoint: svc.endpoint, owner }, '{}'))).code).toBe('PAYTO_MISMATCH');
    expect(p.escrowAsked()).toBe(0);
  });

  it('a service paid through the gateway only (NO_DIRECT_PAYMENT, its payments in the data)', async () => {
    const svc = await service(402, quote('', { escrow: false, extra: { quoteId: 'q-2', service: 'echo', payments: ['platform'] } }));
    const p = payer();
    const err = await refusal(p.pay({ service: 'echo', endpoint: svc.endpoint, owner }, '{}'));
    expect(err.code).toBe('NO_DIRECT_PAYMENT');
    expect(err.data).toMatchObject({ service: 'echo', payments: ['platform'] });
    expect(p.escrowAsked()).toBe(0);
  });

  it('an answer that is no 402 (QUOTE), and a service that does not answer (NETWORK)', async () => {
    const svc = await service(200);
    const p = payer();
    const err = await refusal(p.pay({ endpoint: svc.endpoint, owner }, '{}'));
    expect(err.code).toBe('QUOTE');
    expect(err.data.status).toBe(200);
    expect(svc.requests()).toBe(1);
    const gone = await refusal(p.pay({ endpoint: 'http://127.0.0.1:9/', owner }, '{}'));
    expect(gone.code).toBe('NETWORK');
    expect(p.escrowAsked()).toBe(0);
  });
});
