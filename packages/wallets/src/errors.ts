import { FareboxError } from '@farebox/protocol';

export type WalletErrorCode = 'UNKNOWN_WALLET' | 'BAD_KEY' | 'BAD_TRANSACTION' | 'DECRYPT_FAILED' | 'INVALID_REF';

/** The wallets package's error: a fixed `code` and a message. */
export class WalletError extends FareboxError<WalletErrorCode, undefined> {
  override readonly name: string = 'WalletError';

  constructor(code: WalletErrorCode, message: string) {
    super(code, message);
  }
}
