import type { GatewayWebhookDelivery, GatewayWebhookEventType } from '@farebox/client';
import { WEBHOOK_EVENT_TYPES } from '@farebox/protocol';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { table } from '../format.js';
import { gatewayCall, result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox webhooks list | create | delete | rotate | ping | deliveries | redeliver`: signed webhooks (docs/webhooks.md).

export async function runWebhooksList(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const list = await gatewayCall(() => gw.webhooks.list());
  return result(
    list,
    list.length === 0
      ? 'No webhook endpoints. Add one: farebox webhooks create <url> --events topup.completed,settlement.released'
      : table(
          list.map((w) => ({ id: w.id, url: w.url, events: w.events.join(','), secret: `${w.secret_prefix}…`, created: w.created_at })),
          ['id', 'url', 'events', 'secret', 'created'],
        ),
  );
}

/** `--events a,b` as event types; `all` for every one. Refused before any request. */
export function eventsOption(text: string | undefined): GatewayWebhookEventType[] {
  if (text === undefined || text.trim() === '')
    throw new CliError('USAGE', `--events required: one or more of ${WEBHOOK_EVENT_TYPES.join(', ')} (comma-separated), or all`);
  if (text.trim() === 'all') return [...WEBHOOK_EVENT_TYPES];
  const events = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0) throw new CliError('USAGE', `unknown event type: ${unknown.join(', ')} (one of ${WEBHOOK_EVENT_TYPES.join(', ')}, or all)`);
  return events as GatewayWebhookEventType[];
}

const SECRET_NOTE = 'This is the only time the secret is shown: give it to your receiver now (verifyWebhook in @farebox/provider or @farebox/client).';

export async function runWebhooksCreate(ctx: Context, url: string, options: { events?: string }): Promise<CommandResult> {
  const events = eventsOption(options.events);
  const gw = await ctx.gateway();
  const w = await gatewayCall(() => gw.webhooks.create(url, events));
  return result(w, `${w.secret}\n\nCreated webhook ${w.id} for ${w.url} (${w.events.join(', ')}). ${SECRET_NOTE}`);
}

export async function runWebhooksDelete(ctx: Context, id: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.webhooks.remove(id));
  return result(r, `Deleted webhook ${id}: nothing more is sent to it, and its pending deliveries are cancelled.`);
}

export async function runWebhooksRotate(ctx: Context, id: string, options: { keepPrevious?: string }): Promise<CommandResult> {
  let hours: number | undefined;
  if (options.keepPrevious !== undefined) {
    hours = /^\d+$/.test(options.keepPrevious) ? Number(options.keepPrevious) : Number.NaN;
    if (!Number.isInteger(hours) || hours > 168) throw new CliError('USAGE', '--keep-previous must be a whole number of hours from 0 to 168');
  }
  const gw = await ctx.gateway();
  const w = await gatewayCall(() => gw.webhooks.rotateSecret(id, hours === undefined ? {} : { expirePreviousInHours: hours }));
  const previous = w.previous_secret_expires_at ? `the previous secret signs too until ${w.previous_secret_expires_at}` : 'the previous secret no longer signs';
  return result(w, `${w.secret}\n\nNew secret for webhook ${w.id}; ${previous}. ${SECRET_NOTE}`);
}

export async function runWebhooksPing(ctx: Context, id: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const d = await gatewayCall(() => gw.webhooks.ping(id));
  return result(d, `Sent webhook.ping (${d.event_id}) to webhook ${id} as delivery ${d.id}: see it with farebox webhooks deliveries ${id}`);
}

const lastAttempt = (d: GatewayWebhookDelivery) => {
  const a = d.log[d.log.length - 1];
  return a ? (a.error ?? `status ${a.status}`) : '';
};

export async function runWebhooksDeliveries(ctx: Context, id: string, options: { limit?: string }): Promise<CommandResult> {
  if (options.limit !== undefined && !/^\d+$/.test(options.limit)) throw new CliError('USAGE', '--limit must be a whole number');
  const gw = await ctx.gateway();
  const list = await gatewayCall(() => gw.webhooks.deliveries(id, options.limit === undefined ? {} : { limit: Number(options.limit) }));
  return result(
    list,
    table(
      list.map((d) => ({
        delivery: d.id,
        event: `${d.event_type} ${d.event_id}`,
        state: d.state,
        attempts: String(d.attempts),
        last: lastAttempt(d),
        next: d.next_attempt_at ?? '',
        created: d.created_at,
      })),
      ['delivery', 'event', 'state', 'attempts', 'last', 'next', 'created'],
    ),
  );
}

export async function runWebhooksRedeliver(ctx: Context, id: string, delivery: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const d = await gatewayCall(() => gw.webhooks.redeliver(id, delivery));
  return result(d, `Sending ${d.event_type} ${d.event_id} again to webhook ${id} as delivery ${d.id}.`);
}

export const webhookCommands: CommandGroup = {
  name: 'webhooks',
  register(program, { act }) {
    const hooks = program.command('webhooks').description('signed webhooks: where the gateway POSTs your events (docs/webhooks.md)');
    hooks
      .command('list', { isDefault: true })
      .description('your webhook endpoints')
      .action(() => act((ctx) => runWebhooksList(ctx))());
    hooks
      .command('create <url>')
      .description('register an endpoint (https; its signing secret is shown once)')
      .option('--events <types>', `comma-separated: ${WEBHOOK_EVENT_TYPES.join(', ')}; or all`)
      .action((url: string, o: { events?: string }) => act((ctx) => runWebhooksCreate(ctx, url, o))());
    hooks
      .command('delete <id>')
      .description('delete an endpoint (its pending deliveries are cancelled)')
      .action((id: string) => act((ctx) => runWebhooksDelete(ctx, id))());
    hooks
      .command('rotate <id>')
      .description('a new signing secret (shown once)')
      .option('--keep-previous <hours>', 'the previous secret signs too for this many hours (0 to 168; default 0)')
      .action((id: string, o: { keepPrevious?: string }) => act((ctx) => runWebhooksRotate(ctx, id, o))());
    hooks
      .command('ping <id>')
      .description('send a webhook.ping event to the endpoint')
      .action((id: string) => act((ctx) => runWebhooksPing(ctx, id))());
    hooks
      .command('deliveries <id>')
      .description("the endpoint's delivery log, newest first")
      .option('--limit <n>', '1 to 100 (default 50)')
      .action((id: string, o: { limit?: string }) => act((ctx) => runWebhooksDeliveries(ctx, id, o))());
    hooks
      .command('redeliver <id> <delivery>')
      .description('send a delivery’s event again (the same event and body)')
      .action((id: string, delivery: string) => act((ctx) => runWebhooksRedeliver(ctx, id, delivery))());
  },
};
