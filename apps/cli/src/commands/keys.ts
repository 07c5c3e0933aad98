import type { Context } from '../context.js';
import { table } from '../format.js';
import { gatewayCall, result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox keys list | create | revoke`: API keys.

export async function runKeysList(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const keys = await gatewayCall(() => gw.apiKeys.list());
  return result(
    keys,
    table(
      keys.map((k) => ({
        id: k.id,
        name: k.name,
        prefix: k.prefix,
        created: k.created_at,
        'last used': typeof k.last_used_at === 'string' ? k.last_used_at : '',
      })),
      ['id', 'name', 'prefix', 'created', 'last used'],
    ),
  );
}

export async function runKeysCreate(ctx: Context, name: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const k = await gatewayCall(() => gw.apiKeys.create(name));
  return result(k, `${k.key}\n\nCreated API key "${k.name}" (${k.id}). This is the only time the key is shown: store it now.`);
}

export async function runKeysRevoke(ctx: Context, id: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.apiKeys.revoke(id));
  return result(r, `Revoked API key ${id}.`);
}

export const keyCommands: CommandGroup = {
  name: 'keys',
  register(program, { act }) {
    const keys = program.command('keys').description('API keys');
    keys
      .command('list', { isDefault: true })
      .description('live keys')
      .action(() => act((ctx) => runKeysList(ctx))());
    keys
      .command('create <name>')
      .description('create a key (shown once)')
      .action((name: string) => act((ctx) => runKeysCreate(ctx, name))());
    keys
      .command('revoke <id>')
      .description('revoke a key')
      .action((id: string) => act((ctx) => runKeysRevoke(ctx, id))());
  },
};
