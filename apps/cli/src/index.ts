export { buildProgram, runCli } from './program.js';
export type { ProgramIO } from './program.js';
export {
  runLogin,
  runLogout,
  runWhoami,
  runBalance,
  runTopup,
  runTransactions,
  runSearch,
  runCall,
  runDirectCall,
  readPayload,
  readKeypair,
  runKeysList,
  runKeysCreate,
  runKeysRevoke,
  runConnectionsList,
  runConnectionsRevoke,
  runPublisherActivate,
  runPublisherRegister,
  runPublisherUpdate,
  runPublisherRemove,
  runPublisherOverview,
  runPublisherSettlements,
  runPublisherAnalytics,
  runDevnetFund,
  runDevnetKeypair,
  runModelFetch,
  runDev,
  devCommand,
} from './commands.js';
export type { CommandResult } from './commands.js';
export { runInit } from './init.js';
export { createContext, cliConfigDir } from './context.js';
export type { Context, GlobalOptions, StoredConfig } from './context.js';
export { CliError } from './errors.js';
export type { CliErrorCode } from './errors.js';
