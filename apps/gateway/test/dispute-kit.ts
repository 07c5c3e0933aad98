import { Keypair, TransactionBuilder, Account, BASE_FEE, Operation } from '@stellar/stellar-sdk';
import { ClientError, createClient, type FareboxClient } from '@farebox/client';
import { createAccounts, keypairSigner } from '@farebox/stellar';
import type { Stack } from './settlement-kit.js';

export const USDC = 10_000_000n;

export interface Caller {
  publicKey: string;
  secret: string;
  client: FareboxClient;
}

/** A direct caller with its own key and `usdc` devnet USDC, paying through @farebox/client with the gateway as platform. */
export async function newCaller(s: Stack, usdc: bigint): Promise<Caller> {
  const kp = Keypair.random();
  await s.devnet.friendbot(kp.publicKey());
  await createAccounts(s.gw.core.network).ensureUsdcTrustline(keypairSigner(kp.secret()));
  await s.devnet.friendbot(kp.publicKey(), usdc);
  const client = createClient({
    network: 'local',
    devnetUrl: s.devnet.url,
    secret: kp.secret(),
    escrow: { apiKey: 'farebox-test', budget: { requests: 100_000, windowMs: 1000 } },
    gatewayUrl: s.url,
    env: {},
  });
  return { publicKey: kp.publicKey(), secret: kp.secret(), client };
}

/** Calls a service whose handler fails: the escrow is funded and not served. Returns its id. */
export async function fundedNotServed(caller: Caller, service: string): Promise<string> {
  const err = await caller.client.call(service, { q: 1 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ClientError) || err.code !== 'SERVICE' || !err.data.escrowId)
    throw new Error(`expected a service failure after funding, got ${String(err)}`);
  return err.data.escrowId;
}

/** A dispute proof as any wallet would sign it (sequence 0, manageData farebox_dispute = escrow id). */
export function proofFor(secret: string, escrowId: string, passphrase: string, opts: { value?: string; window?: [number, number] } = {}): string {
  const kp = Keypair.fromSecret(secret);
  const now = Math.floor(Date.now() / 1000);
  const [min, max] = opts.window ?? [now - 10, now + 300];
  const tx = new TransactionBuilder(new Account(kp.publicKey(), '-1'), { fee: BASE_FEE, networkPassphrase: passphrase })
    .addOperation(Operation.manageData({ name: 'farebox_dispute', value: opts.value ?? escrowId }))
    .setTimebounds(min, max)
    .build();
  tx.sign(kp);
  return tx.toXDR();
}
