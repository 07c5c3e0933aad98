import { randomBytes } from 'node:crypto';
import { webhooks as contract } from '@farebox/contract';
import type { Database, Queryable } from '@farebox/ledger';
import type { z } from 'zod';
import { leadOf, systemClock, type Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import { checkEndpoint, type EndpointPolicy } from '../security/endpoint-guard.js';
import { enforceRateLimit, type RateLimitStore } from '../security/rate-limit.js';
import { intParam } from '../views.js';
import { emitEvent, noteBudgetUse } from './events.js';
import { createWebhookWorker, type SecretOpener } from './worker.js';

export { emitEvent, money, noteBudgetUse, webhookLedgerHooks, BUDGET_THRESHOLD_PERCENT } from './events.js';
export type { EmitOptions, EventRecipient } from './events.js';

export type WebhookView = z.input<typeof contract.Webhook>;
export type CreatedWebhookView = z.input<typeof contract.CreatedWebhook>;
export type WebhookDeliveryView = z.input<typeof contract.WebhookDelivery>;

export interface WebhooksOptions {
  db: Database;
  /** Seals and opens the signing secrets (the keystore: AES-256-GCM under a key derived from FAREBOX_KEYSTORE_KEY). */
  secrets: SecretOpener & { sealSecret(context: string, secret: string): string };
  policy: EndpointPolicy;
  rateLimits: RateLimitStore;
  now?: Clock;
  sole: boolean;
  log(message: string, err?: unknown): void;
  crashPoint?: (name: string) => void;
  /** Worker settings (tests shorten them). */
  worker?: { intervalMs?: number; timeoutMs?: number };
}

/** How long a gateway trusts what it read of an account's budget subscription. */
const SUBSCRIBED_TTL_MS = 5_000;
/** Pings and redeliveries per endpoint and minute: the receiver is not flooded through the gateway. */
const SEND_RULE = { name: 'webhook-send', limit: 30, windowMs: 60_000 };

type EndpointRow = {
  id: string;
  url: string;
  events: string[];
  secret_prefix: string;
  created_at: Date | string;
  rotated_at: Date | string | null;
  previous_expires_at: Date | string | null;
};
type DeliveryRow = {
  id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  body: string;
  state: 'pending' | 'delivered' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: Date | string;
  last_status: number | null;
  last_error: string | null;
  created_at: Date | string;
  delivered_at: Date | string | null;
  redelivery_of: string | null;
  log: unknown;
};

const iso = (d: Date | string) => new Date(d).toISOString();
const isoOrNull = (d: Date | string | null) => (d === null ? null : iso(d));
/** `whsec_` + 32 random bytes, base64url. */
const newSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

function endpointView(r: EndpointRow, at: number): WebhookView {
  const previous = r.previous_expires_at !== null && new Date(r.previous_expires_at).getTime() > at ? iso(r.previous_expires_at) : null;
  return {
    id: r.id,
    url: r.url,
    events: r.events as WebhookView['events'],
    secret_prefix: r.secret_prefix,
    created_at: iso(r.created_at),
    rotated_at: isoOrNull(r.rotated_at),
    previous_secret_expires_at: previous,
  };
}

function deliveryView(r: DeliveryRow): WebhookDeliveryView {
  const log = (typeof r.log === 'string' ? JSON.parse(r.log) : r.log) as Array<Record<string, unknown>>;
  return {
    id: r.id,
    webhook_id: r.endpoint_id,
    event_id: r.event_id,
    event_type: r.type,
    state: r.state,
    attempts: r.attempts,
    next_attempt_at: r.state === 'pending' ? iso(r.next_attempt_at) : null,
    last_status: r.last_status,
    last_error: r.last_error,
    created_at: iso(r.created_at),
    delivered_at: isoOrNull(r.delivered_at),
    redelivery_of: r.redelivery_of,
    payload: JSON.parse(r.body) as Record<string, unknown>,
    log: log.map((a) => ({
      attempt: Number(a.attempt),
      at: iso(a.at as string),
      status: a.status === null ? null : Number(a.status),
      error: (a.error as string | null) ?? null,
      duration_ms: Number(a.duration_ms),
      response: (a.response as string | null) ?? null,
    })),
  };
}

const DELIVERY_SELECT = `
  SELECT d.id, d.endpoint_id, d.event_id, ev.type, ev.body, d.state, d.attempts, d.next_attempt_at, d.last_status, d.last_error,
         d.created_at, d.delivered_at, d.redelivery_of,
         COALESCE((SELECT json_agg(json_build_object('attempt', a.attempt, 'at', a.at, 'status', a.status, 'error', a.error,
                                                    'duration_ms', a.duration_ms, 'response', a.response) ORDER BY a.attempt)
                   FROM gw_webhook_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS log
  FROM gw_webhook_deliveries d JOIN gw_webhook_events ev ON ev.id = d.event_id`;

/**
 * Signed webhooks (docs/webhooks.md): an account's endpoints and their
 * secrets, the delivery log, redelivery and pings, the delivery worker, and
 * the budget threshold event. Events are written by the code that makes them
 * (events.ts, `emitEvent`), in its own transaction.
 */
export function createWebhooks(o: WebhooksOptions) {
  const now = o.now ?? systemClock;
  /** How far the gateway's clock runs ahead of the database's (a secret's grace period is stamped by the database). */
  const lead = leadOf(now);
  const worker = createWebhookWorker({
    db: o.db,
    secrets: o.secrets,
    policy: o.policy,
    now,
    sole: o.sole,
    log: o.log,
    ...(o.crashPoint ? { crashPoint: o.crashPoint } : {}),
    ...o.worker,
  });
  const seal = (id: string, secret: string) => o.secrets.sealSecret(`webhook:${id}`, secret);
  /** Budgets known past the threshold on this gateway (nothing more to check this period). */
  const pastThreshold = new Set<string>();
  /**
   * Whether an account has an endpoint for `budget.threshold_reached`, known for a few seconds: a call under a
   * budget costs no extra statement for the accounts (most) that have none. An endpoint registered here counts at
   * once; on another gateway within {@link SUBSCRIBED_TTL_MS}.
   */
  const subscribed = new Map<string, { yes: boolean; until: number }>();
  async function wantsBudgetEvents(accountId: string): Promise<boolean> {
    const hit = subscribed.get(accountId);
    if (hit && hit.until > now()) return hit.yes;
    const { rows } = await o.db.query(
      `SELECT 1 FROM gw_webhook_endpoints WHERE account_id = $1 AND deleted_at IS NULL AND 'budget.threshold_reached' = ANY (events) LIMIT 1`,
      [accountId],
    );
    if (subscribed.size >= 10_000) subscribed.clear();
    subscribed.set(accountId, { yes: rows.length > 0, until: now() + SUBSCRIBED_TTL_MS });
    return rows.length > 0;
  }

  async function owned(accountId: string, id: string): Promise<EndpointRow> {
    const { rows } = await o.db.query<EndpointRow>(
      'SELECT id, url, events, secret_prefix, created_at, rotated_at, previous_expires_at FROM gw_webhook_endpoints WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL',
      [id, accountId],
    );
    if (!rows[0]) throw new GatewayError('NOT_FOUND', 'webhook not found');
    return rows[0];
  }

  async function delivery(q: Queryable, id: string): Promise<WebhookDeliveryView> {
    const { rows } = await q.query<DeliveryRow>(`${DELIVERY_SELECT} WHERE d.id = $1`, [id]);
    return deliveryView(rows[0]!);
  }

  function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
    const r = schema.safeParse(body ?? {});
    if (!r.success) throw new GatewayError('BAD_REQUEST', r.error.issues[0]?.message ?? 'invalid input');
    return r.data;
  }

  return {
    worker,

    async list(accountId: string): Promise<WebhookView[]> {
      const { rows } = await o.db.query<EndpointRow>(
        `SELECT id, url, events, secret_prefix, created_at, rotated_at, previous_expires_at FROM gw_webhook_endpoints
         WHERE account_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`,
        [accountId],
      );
      return rows.map((r) => endpointView(r, now()));
    },

    /** `POST /v1/webhooks`: checked (the body, then the URL under the endpoint guard) before anything is written. */
    async create(accountId: string, body: unknown): Promise<CreatedWebhookView> {
      const input = parse(contract.CreateWebhookBody, body);
      try {
        await checkEndpoint(input.url, o.policy);
      } catch (err) {
        if (err instanceof GatewayError) throw new GatewayError('BAD_REQUEST', err.message.replace(/^endpoint /, 'url '));
        throw err;
      }
      const events = [...new Set(input.events)];
      const id = `whk_${randomBytes(12).toString('base64url')}`;
      const secret = newSecret();
      const { rows } = await o.db.transaction(async (tx) => {
        // The account's row is locked: two registrations at once count each other.
        await tx.query('SELECT id FROM gw_users WHERE id = $1 FOR UPDATE', [accountId]);
        const n = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM gw_webhook_endpoints WHERE account_id = $1 AND deleted_at IS NULL', [
          accountId,
        ]);
        if ((n.rows[0]?.n ?? 0) >= contract.WEBHOOK_LIMITS.endpoints)
          throw new GatewayError('BAD_REQUEST', `too many webhook endpoints (max ${contract.WEBHOOK_LIMITS.endpoints}): delete one first`);
        return tx.query<EndpointRow>(
          `INSERT INTO gw_webhook_endpoints (id, account_id, url, events, secret_sealed, secret_prefix) VALUES ($1, $2, $3, $4, $5, $6)
           RETURNING id, url, events, secret_prefix, created_at, rotated_at, previous_expires_at`,
          [id, accountId, input.url, events, seal(id, secret), secret.slice(0, 10)],
        );
      });
      subscribed.delete(accountId);
      return { ...endpointView(rows[0]!, now()), secret };
    },

    /** `DELETE /v1/webhooks/:id`: nothing more is sent to it; its pending deliveries are cancelled. */
    async remove(accountId: string, id: string): Promise<{ id: string; deleted: true }> {
      await o.db.transaction(async (tx) => {
        const { rows } = await tx.query(
          'UPDATE gw_webhook_endpoints SET deleted_at = now() WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL RETURNING id',
          [id, accountId],
        );
        if (!rows[0]) throw new GatewayError('NOT_FOUND', 'webhook not found');
        await tx.query(`UPDATE gw_webhook_deliveries SET state = 'cancelled', lease_until = NULL WHERE endpoint_id = $1 AND state = 'pending'`, [id]);
      });
      subscribed.delete(accountId);
      return { id, deleted: true };
    },

    /** `POST /v1/webhooks/:id/rotate-secret`: a new secret, shown once; the previous one signs too until `expire_previous_in_hours` passes. */
    async rotate(accountId: string, id: string, body: unknown): Promise<CreatedWebhookView> {
      const input = parse(contract.RotateWebhookSecretBody, body);
      await owned(accountId, id);
      const secret = newSecret();
      const hours = input.expire_previous_in_hours ?? 0;
      const { rows } = await o.db.query<EndpointRow>(
        `UPDATE gw_webhook_endpoints SET
           previous_sealed = CASE WHEN $4::float8 > 0 THEN secret_sealed ELSE NULL END,
           previous_expires_at = CASE WHEN $4::float8 > 0 THEN now() + make_interval(secs => $4::float8 * 3600 + $5::float8) ELSE NULL END,
           secret_sealed = $3, secret_prefix = $6, rotated_at = now()
         WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL
         RETURNING id, url, events, secret_prefix, created_at, rotated_at, previous_expires_at`,
        [id, accountId, seal(id, secret), hours, lead() / 1000, secret.slice(0, 10)],
      );
      if (!rows[0]) throw new GatewayError('NOT_FOUND', 'webhook not found');
      return { ...endpointView(rows[0], now()), secret };
    },

    /** `GET /v1/webhooks/:id/deliveries`: newest first, each with its attempts. */
    async deliveries(accountId: string, id: string, limit: string | undefined): Promise<WebhookDeliveryView[]> {
      const n = intParam(limit, 'limit', 1, contract.WEBHOOK_LIMITS.deliveries, 50);
      await owned(accountId, id);
      const { rows } = await o.db.query<DeliveryRow>(`${DELIVERY_SELECT} WHERE d.endpoint_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, [id, n]);
      return rows.map(deliveryView);
    },

    /** `POST /v1/webhooks/:id/deliveries/:delivery/redeliver`: the same event (same id and body) in a new delivery, sent now. */
    async redeliver(accountId: string, id: string, deliveryId: string): Promise<WebhookDeliveryView> {
      await owned(accountId, id);
      await enforceRateLimit(o.rateLimits, SEND_RULE, id);
      const created = await o.db.transaction(async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `INSERT INTO gw_webhook_deliveries (id, endpoint_id, event_id, redelivery_of)
           SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), endpoint_id, event_id, id FROM gw_webhook_deliveries WHERE id = $1 AND endpoint_id = $2
           RETURNING id`,
          [deliveryId, id],
        );
        if (!rows[0]) throw new GatewayError('NOT_FOUND', 'delivery not found');
        return delivery(tx, rows[0].id);
      });
      worker.kick();
      return created;
    },

    /** `POST /v1/webhooks/:id/ping`: a `webhook.ping` event to this endpoint alone. */
    async ping(accountId: string, id: string): Promise<WebhookDeliveryView> {
      const endpoint = await owned(accountId, id);
      await enforceRateLimit(o.rateLimits, SEND_RULE, id);
      const created = await o.db.transaction(async (tx) => {
        const eventId = `evt_${randomBytes(18).toString('base64url')}`;
        const body = JSON.stringify({
          id: eventId,
          type: 'webhook.ping',
          created_at: new Date(now()).toISOString(),
          data: { webhook_id: id, url: endpoint.url, message: 'A test event from Farebox: your endpoint receives and verifies webhooks.' },
        });
        await tx.query(`INSERT INTO gw_webhook_events (id, account_id, type, body) VALUES ($1, $2, 'webhook.ping', $3)`, [eventId, accountId, body]);
        const { rows } = await tx.query<{ id: string }>(
          `INSERT INTO gw_webhook_deliveries (id, endpoint_id, event_id) VALUES ('dlv_' || replace(gen_random_uuid()::text, '-', ''), $1, $2) RETURNING id`,
          [id, eventId],
        );
        return delivery(tx, rows[0]!.id);
      });
      worker.kick();
      return created;
    },

    /**
     * After a hold or a wallet payment under a spending budget: `budget.threshold_reached` once the budget is
     * 80 % used (once per credential and period, whichever gateway sees it first). Off the call's path.
     */
    budgetUsed(use: { accountId: string; credentialId: string; source: 'key' | 'connection'; period: string }): void {
      const key = `${use.credentialId}\n${use.period}`;
      if (pastThreshold.has(key)) return;
      wantsBudgetEvents(use.accountId)
        .then((wanted) => (wanted ? noteBudgetUse(o.db, use, now) : false))
        .then(
          (past) => {
            if (!past) return;
            if (pastThreshold.size >= 10_000) pastThreshold.clear();
            pastThreshold.add(key);
            worker.kick();
          },
          (err: unknown) => o.log(`budget threshold of credential ${use.credentialId} not checked`, err),
        );
    },

    emit: emitEvent,
  };
}

export type Webhooks = ReturnType<typeof createWebhooks>;
