export { createDevnet, startDevnet } from './devnet.js';
export type { Devnet, DevnetCore, DevnetOptions, DevnetStats, DevnetHandler, DevnetTls } from './devnet.js';
export { Chain } from './core.js';
export type { TxRecord, EventRecord, LedgerInfo, SubmitResult } from './core.js';
export { HostError, registryContract, stellarAssetContract, argAddress, argI128, argString } from './contracts.js';
export type { DevnetContract, HostContext } from './contracts.js';
export type { AccountState } from './state.js';
export { createEscrowApi } from './escrow/api.js';
export type { EscrowApiOptions, EscrowReply } from './escrow/api.js';
export { LOCAL_ESCROW_DEPLOYER_ID, ESCROW_ERRORS, escrowContract, escrowDeployerContract, escrowContractId } from './escrow/contract.js';
export type { EscrowState } from './escrow/contract.js';
export {
  LOCAL_CHANNEL_FACTORY_ID,
  CHANNEL_CONTRACT_LABEL,
  CHANNEL_WASM_HASH,
  CHANNEL_FACTORY_ADMIN,
  CHANNEL_KEYS,
  channelContract,
  channelFactoryContract,
} from './channel/contract.js';
export { channelAddress, commitmentBytes, commitmentScVal, CHANNEL_ERRORS } from '@farebox/stellar';
