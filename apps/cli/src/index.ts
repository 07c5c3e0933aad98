export { buildProgram, runCli } from './program.js';
export type { ProgramIO } from './program.js';
export { runLogin, runLogout, runWhoami, runBalance, runTopup, runTransactions } from './commands/account.js';
export { runSearch, runCall, runDirectCall, readPayload } from './commands/catalog.js';
export { runKeysList, runKeysCreate, runKeysRevoke } from './commands/keys.js';
export { runConnectionsList, runConnectionsRevoke } from './commands/connections.js';
export {
  runPublisherActivate,
  runPublisherRegister,
  runPublisherUpdate,
  runPublisherRemove,
  runPublisherOverview,
  runPublisherSettlements,
  runPublisherAnalytics,
} from './commands/publisher.js';
export { runDevnetFund, runDevnetKeypair } from './commands/devnet.js';
export { runModelFetch } from './commands/model.js';
export { runDev, devCommand } from './commands/dev.js';
export { readKeypair } from './commands/shared.js';
export type { CommandResult, CommandGroup, Cli } from './commands/shared.js';
export { COMMAND_GROUPS } from './commands/index.js';
export { runInit } from './commands/init.js';
export { createContext, cliConfigDir, cliSettingsFromEnv } from './context.js';
export type { CliSettings, Context, Env, GlobalOptions, StoredConfig } from './context.js';
export { CliError } from './errors.js';
export { cliMessage, COMMAND_FOR_ROUTE } from './hints.js';
export type { CliErrorCode } from './errors.js';
