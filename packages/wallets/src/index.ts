export { WalletError } from './errors.js';
export type { WalletErrorCode } from './errors.js';
export { walletSigner } from './port.js';
export type { WalletProvider, TransactionSigner } from './port.js';
export { MemoryKeystoreStorage, FileKeystoreStorage } from './storage.js';
export type { KeystoreRecord, KeystoreStorage } from './storage.js';
export { createLocalKeystore } from './keystore.js';
export type { LocalKeystore, LocalKeystoreOptions } from './keystore.js';
