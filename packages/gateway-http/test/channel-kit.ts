import { Keypair } from '@stellar/stellar-sdk';
import { createAccounts, keypairSigner, LOCAL_CHANNEL_FACTORY_ID, openChannel, rpcServer } from '@farebox/stellar';
import type { HttpStack } from './kit.js';

/**
 * A one-way channel opened on the stack's devnet through its factory by a new funder (friendbot, a USDC trustline and
 * `funds` minted, default the deposit): `amount` deposited to the gateway's treasury (or `recipient`), commitments
 * signed by `key`, a refund waiting period of `period` ledgers (default 20, above the local minimum of 10).
 */
export async function openTestChannel(
  h: HttpStack,
  o: { amount: bigint; key: Keypair; recipient?: string; period?: number; funds?: bigint },
): Promise<{ id: string; funder: Keypair }> {
  const funder = Keypair.random();
  await h.devnet.friendbot(funder.publicKey());
  await createAccounts(h.core.network).ensureUsdcTrustline(keypairSigner(funder.secret()));
  await h.devnet.mintUsdc(funder.publicKey(), o.funds ?? o.amount);
  const { channel } = await openChannel(rpcServer(h.core.network), h.core.network, keypairSigner(funder.secret()), {
    factory: LOCAL_CHANNEL_FACTORY_ID,
    token: h.core.network.usdc.contractId,
    recipient: o.recipient ?? h.core.treasuryAddress,
    commitmentKey: o.key.rawPublicKey(),
    amount: o.amount,
    refundWaitingPeriod: o.period ?? 20,
  });
  return { id: channel, funder };
}
