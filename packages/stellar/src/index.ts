export { StellarError } from './errors.js';
export type { StellarErrorCode, ResultCodes } from './errors.js';
export {
  resolveNetwork,
  devnetPassphrase,
  LOCAL_USDC_ISSUER,
  LOCAL_USDC_ISSUER_SECRET,
  TESTNET_USDC_ISSUER,
  LOCAL_REGISTRY_CONTRACT_ID,
  LOCAL_CHANNEL_FACTORY_ID,
  LOCAL_CHANNEL_WASM_HASH,
  LOCAL_PASSPHRASE,
  TESTNET_PASSPHRASE,
  MAINNET_PASSPHRASE,
  DEFAULT_DEVNET_URL,
} from './network.js';
export type { NetworkName, NetworkConfig, ResolveNetworkOptions } from './network.js';
export { keypairSigner } from './signer.js';
export type { TxSigner } from './signer.js';
export { createRegistryClient } from './registry.js';
export type { RegistryAgent, RegistryEvent, RegistryEventType, RegistryClient, RegisterInput, RegistryEventsOptions } from './registry.js';
export { REGISTRY_ERRORS, REGISTRY_LIMITS } from './contract-errors.js';
export { createAccounts, decimalToUnits, unitsToDecimal } from './accounts.js';
export type { Accounts, AccountBalances } from './accounts.js';
export { createCatalogMirror, FileCursorStore, MemoryCursorStore } from './mirror.js';
export type { CatalogMirror, CatalogMirrorOptions, CatalogMirrorStatus, CatalogChange, CursorStore } from './mirror.js';
export { resultCodesFromXdr, txCodeName, opCodeName } from './results.js';
export { readMuxedAddress, serviceMuxedId, servicePayTo } from './service-address.js';
export { channelAddress, commitmentBytes, commitmentScVal, CHANNEL_COMMITMENT_DOMAIN, CHANNEL_ERRORS } from './channel.js';
export type { ChannelErrorNumber } from './channel.js';
export { channelInvoke, openChannel, readChannelState } from './channel-state.js';
export { rpcServer } from './soroban.js';
export type { ChannelCall, ChannelState, OpenChannelInput } from './channel-state.js';
