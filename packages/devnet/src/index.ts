export { createDevnet, startDevnet } from './devnet.js';
export type { Devnet, DevnetCore, DevnetOptions, DevnetStats, DevnetHandler } from './devnet.js';
export { Chain } from './core.js';
export type { TxRecord, EventRecord, LedgerInfo, SubmitResult } from './core.js';
export { HostError, registryContract, stellarAssetContract, argAddress, argI128, argString } from './contracts.js';
export type { DevnetContract, HostContext } from './contracts.js';
export type { AccountState } from './state.js';
