import { accountCommands } from './account.js';
import { catalogCommands } from './catalog.js';
import { channelCommands } from './channel.js';
import { connectionCommands } from './connections.js';
import { devCommands } from './dev.js';
import { devnetCommands } from './devnet.js';
import { discoveryCommands } from './discovery.js';
import { initCommands } from './init.js';
import { keyCommands } from './keys.js';
import { modelCommands } from './model.js';
import { operatorCommands } from './operator.js';
import { publisherCommands } from './publisher.js';
import { webhookCommands } from './webhooks.js';
import type { CommandGroup } from './shared.js';

/** Every command group of `farebox`, in the order `--help` lists them. A new group is one file here and one line in this list. */
export const COMMAND_GROUPS: readonly CommandGroup[] = [
  accountCommands,
  catalogCommands,
  channelCommands,
  keyCommands,
  connectionCommands,
  webhookCommands,
  publisherCommands,
  initCommands,
  devCommands,
  devnetCommands,
  modelCommands,
  operatorCommands,
  discoveryCommands,
];
