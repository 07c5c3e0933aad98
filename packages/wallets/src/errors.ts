export type WalletErrorCode = 'UNKNOWN_WALLET' | 'BAD_KEY' | 'BAD_TRANSACTION' | 'DECRYPT_FAILED' | 'INVALID_REF';

/** The wallets package's error: a fixed `code` and a message. */
export class WalletError extends Error {
  override readonly name = 'WalletError';
  readonly code: WalletErrorCode;

  constructor(code: WalletErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
