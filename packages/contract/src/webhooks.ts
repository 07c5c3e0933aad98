import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from '@farebox/protocol';
import { intQuery, LIST_LIMITS, listQuery } from './inputs.js';
import { account, type Operation } from './operation.js';

/**
 * Signed webhooks (docs/webhooks.md): an account's endpoints, the secret each
 * delivery is signed with (shown once, at creation and rotation), the
 * delivery log and redelivery. A session or a manage key only: a spend key
 * and an OAuth token never reach them (no OAuth scope).
 */

const unknownField = (iss: { code: string; keys?: string[] }) =>
  iss.code === 'unrecognized_keys' ? `unknown field: ${(iss.keys ?? []).join(', ')}` : undefined;
const Timestamp = z.string().meta({ format: 'date-time' });

/** The most endpoints an account may have, and the longest URL. */
export const WEBHOOK_LIMITS = { endpoints: 16, url: 2048, deliveries: 100 } as const;

const TYPES = WEBHOOK_EVENT_TYPES.join(', ');
export const WEBHOOK_INPUT_ERRORS = {
  url: 'url required',
  urlLength: `url too long (max ${WEBHOOK_LIMITS.url})`,
  events: `events required: a list of one or more of ${TYPES}`,
  hours: 'expire_previous_in_hours must be a whole number from 0 to 168',
} as const;

export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES).meta({ id: 'WebhookEventType', description: 'An event an endpoint may subscribe to.' });

export const CreateWebhookBody = z
  .strictObject(
    {
      url: z.string({ error: WEBHOOK_INPUT_ERRORS.url }).min(1, WEBHOOK_INPUT_ERRORS.url).max(WEBHOOK_LIMITS.url, WEBHOOK_INPUT_ERRORS.urlLength).meta({
        description: 'Where the events are POSTed: https (plain http only to loopback where the gateway allows loopback endpoints), public addresses only.',
      }),
      events: z
        .array(
          z.string({ error: WEBHOOK_INPUT_ERRORS.events }).superRefine((v, ctx) => {
            if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(v))
              ctx.addIssue({ code: 'custom', message: `unknown event type: ${v} (one of ${TYPES})` });
          }),
          { error: WEBHOOK_INPUT_ERRORS.events },
        )
        .min(1, WEBHOOK_INPUT_ERRORS.events)
        .meta({ description: `The event types to send (a repeated one counts once): ${TYPES}.` }),
    },
    { error: unknownField },
  )
  .meta({ id: 'CreateWebhookBody', description: 'A webhook endpoint: its URL and the events it receives.' });

export const RotateWebhookSecretBody = z
  .strictObject(
    {
      expire_previous_in_hours: z
        .number({ error: WEBHOOK_INPUT_ERRORS.hours })
        .int(WEBHOOK_INPUT_ERRORS.hours)
        .min(0, WEBHOOK_INPUT_ERRORS.hours)
        .max(168, WEBHOOK_INPUT_ERRORS.hours)
        .optional()
        .meta({ description: 'How long deliveries stay signed with the previous secret too (0, the default: it stops at once).' }),
    },
    { error: unknownField },
  )
  .meta({ id: 'RotateWebhookSecretBody' });

export const Webhook = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(WebhookEventType),
    secret_prefix: z.string().meta({ description: 'The first characters of the signing secret (`whsec_` and 4 more), to tell secrets apart.' }),
    created_at: Timestamp,
    rotated_at: Timestamp.nullable(),
    previous_secret_expires_at: Timestamp.nullable().meta({ description: 'Until when deliveries carry a signature under the previous secret too.' }),
  })
  .meta({ id: 'Webhook', description: 'A webhook endpoint of the account.' });

export const CreatedWebhook = Webhook.extend({
  secret: z.string().startsWith('whsec_').meta({ description: 'The signing secret: shown in this answer only. Store it with the receiver.' }),
}).meta({ id: 'CreatedWebhook', description: 'A webhook endpoint with its signing secret (shown once).' });

export const DeletedWebhook = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedWebhook' });

export const WebhookAttempt = z
  .object({
    attempt: z.number().int(),
    at: Timestamp,
    status: z.number().int().nullable().meta({ description: "The receiver's HTTP status; null when it did not answer." }),
    error: z
      .string()
      .nullable()
      .meta({ description: 'Why the attempt failed (`status 500`, `timed out after 10000 ms`, `connection refused`, ...); null when delivered.' }),
    duration_ms: z.number().int(),
    response: z.string().nullable().meta({ description: "The start of the receiver's answer (256 characters at most)." }),
  })
  .meta({ id: 'WebhookAttempt' });

export const WebhookDelivery = z
  .object({
    id: z.string(),
    webhook_id: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    state: z.enum(['pending', 'delivered', 'failed', 'cancelled']).meta({
      description:
        '`pending` (sent or retried at `next_attempt_at`), `delivered` (a 2xx answer), `failed` (no 2xx answer within a day), `cancelled` (the endpoint was deleted).',
    }),
    attempts: z.number().int(),
    next_attempt_at: Timestamp.nullable(),
    last_status: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: Timestamp,
    delivered_at: Timestamp.nullable(),
    redelivery_of: z.string().nullable().meta({ description: 'The delivery this one sends again (POST .../redeliver).' }),
    payload: z.record(z.string(), z.unknown()).meta({ description: 'The event as sent (the request body).' }),
    log: z.array(WebhookAttempt).meta({ description: 'Every finished attempt, oldest first.' }),
  })
  .meta({ id: 'WebhookDelivery', description: 'One event sent to one endpoint, with its attempts.' });

const WebhookParams = z.object({ id: z.string() });
const DeliveryParams = z.object({ id: z.string(), delivery: z.string() });
const op = <const O extends Operation>(o: O): O => o;
const AUTH_ERRORS = {
  401: 'missing or invalid credential (`authentication required`, `invalid credential`, `session expired`)',
  403: 'a cookie write without the CSRF token or from another origin; a spend key (`code` CREDENTIAL_KIND) or an OAuth token: webhooks are managed with the session or a manage key',
  429: 'rate limit exceeded (`Retry-After`)',
} as const;
const NOT_FOUND = { 404: 'webhook not found' } as const;
const CREATE_400 = `${WEBHOOK_INPUT_ERRORS.url}; ${WEBHOOK_INPUT_ERRORS.urlLength}; ${WEBHOOK_INPUT_ERRORS.events}; unknown event type: <type> (...); unknown field: <name>; url must be an absolute URL; url must use https; url must not contain credentials; url resolves to a private or reserved address; url is the gateway itself; url host does not resolve; too many webhook endpoints (max ${WEBHOOK_LIMITS.endpoints}): delete one first`;

/** The webhook operations, spread into the table (operations.ts). */
// biome-ignore format: a table, one operation per line
export const webhookOperations = {
  listWebhooks: op({ id: 'listWebhooks', method: 'GET', path: '/v1/webhooks', tag: 'webhooks', summary: "The account's webhook endpoints", auth: account(), input: { query: listQuery(LIST_LIMITS.account) }, status: 200, output: z.array(Webhook), errors: { ...AUTH_ERRORS, 400: `invalid limit (must be 1 <= n <= ${LIST_LIMITS.account})` } }),
  createWebhook: op({ id: 'createWebhook', method: 'POST', path: '/v1/webhooks', tag: 'webhooks', summary: 'Register a webhook endpoint (its signing secret is in this answer once)', auth: account(), input: { body: CreateWebhookBody }, status: 201, output: CreatedWebhook, errors: { ...AUTH_ERRORS, 400: CREATE_400 } }),
  deleteWebhook: op({ id: 'deleteWebhook', method: 'DELETE', path: '/v1/webhooks/:id', tag: 'webhooks', summary: 'Delete a webhook endpoint (its pending deliveries are cancelled)', auth: account(), input: { params: WebhookParams }, status: 200, output: DeletedWebhook, errors: { ...AUTH_ERRORS, ...NOT_FOUND } }),
  rotateWebhookSecret: op({ id: 'rotateWebhookSecret', method: 'POST', path: '/v1/webhooks/:id/rotate-secret', tag: 'webhooks', summary: 'A new signing secret (in this answer once); the previous one stops at once or after expire_previous_in_hours', auth: account(), input: { params: WebhookParams, body: RotateWebhookSecretBody }, status: 200, output: CreatedWebhook, errors: { ...AUTH_ERRORS, 400: `${WEBHOOK_INPUT_ERRORS.hours}; unknown field: <name>`, ...NOT_FOUND } }),
  pingWebhook: op({ id: 'pingWebhook', method: 'POST', path: '/v1/webhooks/:id/ping', tag: 'webhooks', summary: 'Send a webhook.ping event to this endpoint (to check the receiver and its secret)', auth: account(), input: { params: WebhookParams }, status: 201, output: WebhookDelivery, errors: { ...AUTH_ERRORS, ...NOT_FOUND, 429: 'more than 30 pings and redeliveries a minute for this endpoint, or the account\'s rate limit (`Retry-After`)' } }),
  listWebhookDeliveries: op({ id: 'listWebhookDeliveries', method: 'GET', path: '/v1/webhooks/:id/deliveries', tag: 'webhooks', summary: "The endpoint's delivery log, newest first", auth: account(), input: { params: WebhookParams, query: z.object({ limit: intQuery('limit', 1, WEBHOOK_LIMITS.deliveries, 50) }) }, status: 200, output: z.array(WebhookDelivery), errors: { ...AUTH_ERRORS, 400: `invalid limit (must be 1 <= n <= ${WEBHOOK_LIMITS.deliveries})`, ...NOT_FOUND } }),
  redeliverWebhook: op({ id: 'redeliverWebhook', method: 'POST', path: '/v1/webhooks/:id/deliveries/:delivery/redeliver', tag: 'webhooks', summary: 'Send a delivered, failed or pending event again (a new delivery, the same event and body)', auth: account(), input: { params: DeliveryParams }, status: 201, output: WebhookDelivery, errors: { ...AUTH_ERRORS, 404: 'webhook not found; delivery not found', 429: 'more than 30 pings and redeliveries a minute for this endpoint, or the account\'s rate limit (`Retry-After`)' } }),
} as const;
