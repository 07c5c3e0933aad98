import type { Context } from '../context.js';
import { table } from '../format.js';
import { gatewayCall, result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox connections list | revoke`: apps connected through OAuth.

export async function runConnectionsList(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const list = await gatewayCall(() => gw.oauthConnections.list());
  const s = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  return result(
    list,
    table(
      list.map((c) => ({
        id: c.id,
        app: s(c.client_name),
        scopes: s(c.scopes),
        'daily limit': s(c.daily_limit_usd),
        connected: s(c.created_at),
        'last used': s(c.last_used_at),
      })),
      ['id', 'app', 'scopes', 'daily limit', 'connected', 'last used'],
    ),
  );
}

export async function runConnectionsRevoke(ctx: Context, id: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.oauthConnections.revoke(id));
  return result(r ?? { id, revoked: true }, `Disconnected ${id}: its tokens no longer work.`);
}

export const connectionCommands: CommandGroup = {
  name: 'connections',
  register(program, { act }) {
    const conns = program.command('connections').description('apps connected through OAuth (assistants, the MCP adapter)');
    conns
      .command('list', { isDefault: true })
      .description('connected apps')
      .action(() => act((ctx) => runConnectionsList(ctx))());
    conns
      .command('revoke <id>')
      .description('disconnect an app (its tokens stop working)')
      .action((id: string) => act((ctx) => runConnectionsRevoke(ctx, id))());
  },
};
