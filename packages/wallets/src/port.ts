/**
 * The wallet-provider port. The gateway asks a provider to create wallets and
 * to sign transactions; it never sees a secret. A hosted custody service and
 * the local keystore both implement it.
 */
export interface WalletProvider {
  /** Creates the wallet for `ref` (idempotent: the same ref always gives the same address). */
  create(ref: string): Promise<string>;
  /** The address of `ref`'s wallet, if it exists. */
  publicKey(ref: string): Promise<string | undefined>;
  /** Signs a transaction envelope (base64 XDR) with `address`'s key and returns the signed XDR. */
  sign(address: string, txXdr: string, networkPassphrase: string): Promise<string>;
}

/** Something that can sign transactions as one account (a wallet, or a local keypair). */
export interface TransactionSigner {
  publicKey: string;
  signTransaction(txXdr: string, networkPassphrase: string): Promise<string>;
}

/** Binds a wallet provider to one address, giving a {@link TransactionSigner}. */
export function walletSigner(provider: WalletProvider, address: string): TransactionSigner {
  return { publicKey: address, signTransaction: (xdr, passphrase) => provider.sign(address, xdr, passphrase) };
}
