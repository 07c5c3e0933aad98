import { Keypair, TransactionBuilder } from '@stellar/stellar-sdk';
import { StellarError } from './errors.js';

/** Something that signs Stellar transactions for one account (a keypair, a wallet service, a KMS). */
export interface TxSigner {
  publicKey: string;
  /** Returns the base64 envelope with this account's signature added. */
  signTransaction(xdr: string, networkPassphrase: string): Promise<string>;
}

/**
 * A signer holding a secret seed in memory.
 *
 * @example
 * const signer = keypairSigner(process.env.AGENT_WALLET_SECRET!);
 */
export function keypairSigner(secret: string): TxSigner {
  let kp: Keypair;
  try {
    kp = Keypair.fromSecret(secret);
  } catch {
    throw new StellarError('INVALID_INPUT', 'not a valid S... secret seed');
  }
  return {
    publicKey: kp.publicKey(),
    async signTransaction(xdr, networkPassphrase) {
      const tx = TransactionBuilder.fromXDR(xdr, networkPassphrase);
      tx.sign(kp);
      return tx.toEnvelope().toXDR('base64');
    },
  };
}
