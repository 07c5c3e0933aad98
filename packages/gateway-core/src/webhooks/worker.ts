import { signWebhookPayload, WEBHOOK_HEADERS } from '@farebox/protocol';
import type { Database } from '@farebox/ledger';
import { request } from 'undici';
import { leadOf, systemClock, type Clock } from '../clock.js';
import { checkEndpoint, guardedDispatcher, type EndpointPolicy } from '../security/endpoint-guard.js';

/** What the worker needs of the keystore: the endpoints' sealed secrets opened. */
export interface SecretOpener {
  openSecret(context: string, sealed: string): string;
}

export interface WebhookWorkerOptions {
  db: Database;
  secrets: SecretOpener;
  /** The endpoint guard of service calls (no private addresses, https unless loopback is allowed, never the gateway itself). */
  policy: EndpointPolicy;
  /** The gateway's clock: signatures' timestamps; leases and retry times move by how far it runs ahead of the machine's (as holds do). */
  now?: Clock;
  /** This process alone opens the database (embedded PGlite): leases left by an earlier process are given back at start. */
  sole: boolean;
  /** How often due deliveries are looked for (default 1 s); an event written on this gateway wakes the worker at once. */
  intervalMs?: number;
  /** How long a receiver may take to answer (default 10 s). */
  timeoutMs?: number;
  /** Deliveries sent at once by this gateway (default 8). */
  concurrency?: number;
  log(message: string, err?: unknown): void;
  /** The crash tests' hook: `webhook:claimed` (a delivery leased, not sent yet). */
  crashPoint?: (name: string) => void;
}

/** How long a delivery is retried, from its first attempt: a day. */
export const RETRY_FOR_SECONDS = 86_400;
/** How long a claimed delivery belongs to the gateway sending it; after that (a crash) any gateway sends it. */
export const LEASE_SECONDS = 60;
/** The wait after failed attempt n (1-based): 30 s, doubling, at most 8 hours; a day after the event the delivery is `failed`. */
export const retryDelaySeconds = (attempt: number): number => Math.min(8 * 3600, 30 * 2 ** Math.min(Math.max(attempt - 1, 0), 20));
/** The start of a receiver's answer kept in the log. */
const RESPONSE_CHARS = 256;

type Claimed = {
  id: string;
  attempts: number;
  endpoint_id: string;
  url: string;
  secret_sealed: string;
  previous_sealed: string | null;
  previous_valid: boolean;
  body: string;
  type: string;
  event_id: string;
};

interface Outcome {
  status: number | null;
  error: string | null;
  response: string | null;
  durationMs: number;
}

/**
 * The delivery worker, one per gateway: claims due deliveries (`FOR UPDATE
 * SKIP LOCKED`, leased for {@link LEASE_SECONDS}: gateways sharing the database
 * never send the same one at once), signs each body with the endpoint's
 * secret (and its previous one while it is valid), POSTs it through the
 * endpoint guard, and records the attempt. A 2xx answer delivers; anything
 * else is retried with exponential backoff until a day after the event.
 */
export function createWebhookWorker(o: WebhookWorkerOptions) {
  const now = o.now ?? systemClock;
  /** Seconds the gateway's clock runs ahead of the machine's (0 with the default clock). */
  const ahead = leadOf(now);
  const lead = () => ahead() / 1000;
  const timeoutMs = o.timeoutMs ?? 10_000;
  const concurrency = o.concurrency ?? 8;
  const dispatcher = guardedDispatcher(o.policy, { keepAliveTimeout: 5_000, connections: 4 });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;

  async function claim(): Promise<Claimed[]> {
    const { rows } = await o.db.query<Claimed>(
      `WITH claimed AS (
         UPDATE gw_webhook_deliveries SET attempts = attempts + 1, lease_until = now() + make_interval(secs => $1::float8 + $2::float8),
           -- Retried for a day from the first attempt (by the gateway's clock, as the retries are).
           expires_at = CASE WHEN attempts = 0 THEN now() + make_interval(secs => $4::float8 + $2::float8) ELSE expires_at END
         WHERE id IN (
           SELECT id FROM gw_webhook_deliveries
           WHERE state = 'pending' AND next_attempt_at <= now() + make_interval(secs => $2::float8)
             AND (lease_until IS NULL OR lease_until <= now() + make_interval(secs => $2::float8))
           ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING id, attempts, endpoint_id, event_id
       )
       SELECT c.id, c.attempts, c.endpoint_id, c.event_id, e.url, e.secret_sealed, e.previous_sealed,
              COALESCE(e.previous_expires_at > now() + make_interval(secs => $2::float8), false) AS previous_valid, ev.body, ev.type
       FROM claimed c JOIN gw_webhook_endpoints e ON e.id = c.endpoint_id JOIN gw_webhook_events ev ON ev.id = c.event_id`,
      [LEASE_SECONDS, lead(), concurrency, RETRY_FOR_SECONDS],
    );
    return rows;
  }

  async function send(d: Claimed): Promise<Outcome> {
    // The attempt's duration (the delivery log's): the machine's monotonic time (clock.ts).
    const started = performance.now();
    const done = (status: number | null, error: string | null, response: string | null = null): Outcome => ({
      status,
      error,
      response,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      await checkEndpoint(d.url, o.policy);
    } catch (err) {
      return done(null, `refused: ${(err as Error).message.replace(/^endpoint /, 'url ')}`);
    }
    const context = `webhook:${d.endpoint_id}`;
    const secrets = [o.secrets.openSecret(context, d.secret_sealed)];
    if (d.previous_sealed && d.previous_valid) secrets.push(o.secrets.openSecret(context, d.previous_sealed));
    const signature = await signWebhookPayload(secrets, d.body, Math.floor(now() / 1000));
    let res;
    try {
      res = await request(d.url, {
        dispatcher,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Farebox-Webhooks/1',
          [WEBHOOK_HEADERS.signature]: signature,
          [WEBHOOK_HEADERS.eventId]: d.event_id,
          [WEBHOOK_HEADERS.eventType]: d.type,
          [WEBHOOK_HEADERS.deliveryId]: d.id,
        },
        body: d.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      } as Parameters<typeof request>[1]);
    } catch (err) {
      const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
      if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_HEADERS_TIMEOUT') return done(null, `timed out after ${timeoutMs} ms`);
      if (e.code === 'EFAREBOX_BLOCKED' || e.cause?.code === 'EFAREBOX_BLOCKED') return done(null, `refused: ${e.cause?.message ?? e.message}`);
      const code = e.cause?.code ?? e.code;
      return done(null, code === 'ECONNREFUSED' ? 'connection refused' : `connection failed (${code ?? e.message ?? 'unknown'})`);
    }
    let text = '';
    try {
      for await (const chunk of res.body) {
        text += (chunk as Buffer).toString('utf8');
        if (text.length >= RESPONSE_CHARS) break;
      }
    } catch {
      // The answer's status is what counts; its body is only kept for the log.
    }
    res.body.destroy();
    const response = text.slice(0, RESPONSE_CHARS) || null;
    if (res.statusCode >= 200 && res.statusCode < 300) return done(res.statusCode, null, response);
    const redirect = res.statusCode >= 300 && res.statusCode < 400 ? ' (redirects are not followed)' : '';
    return done(res.statusCode, `status ${res.statusCode}${redirect}`, response);
  }

  /** Records the attempt, only by the claim that is still current (`attempts`): a late answer after the lease passed changes nothing. */
  async function record(d: Claimed, out: Outcome): Promise<void> {
    const delivered = out.error === null;
    await o.db.query(
      `WITH d AS (
         UPDATE gw_webhook_deliveries SET
           state = CASE WHEN $3 THEN 'delivered' WHEN now() + make_interval(secs => $8::float8) >= expires_at THEN 'failed' ELSE 'pending' END,
           delivered_at = CASE WHEN $3 THEN now() ELSE NULL END,
           next_attempt_at = CASE WHEN $3 THEN next_attempt_at ELSE LEAST(now() + make_interval(secs => $9::float8 + $8::float8), expires_at) END,
           lease_until = NULL, last_status = $4, last_error = $5
         WHERE id = $1 AND attempts = $2 AND state = 'pending'
         RETURNING id
       )
       INSERT INTO gw_webhook_attempts (delivery_id, attempt, status, error, duration_ms, response)
       SELECT id, $2, $4, $5, $6, $7 FROM d`,
      [d.id, d.attempts, delivered, out.status, out.error, out.durationMs, out.response, lead(), retryDelaySeconds(d.attempts)],
    );
  }

  async function pass(): Promise<void> {
    for (;;) {
      if (stopped) return;
      const batch = await claim();
      if (batch.length === 0) return;
      o.crashPoint?.('webhook:claimed');
      await Promise.all(
        batch.map(async (d) => {
          try {
            await record(d, await send(d));
          } catch (err) {
            // The lease ends and another pass (here or on another gateway) sends it again.
            o.log(`webhook delivery ${d.id} could not be recorded (retried after its lease)`, err);
          }
        }),
      );
    }
  }

  /** Looks for due deliveries now, or right after the pass under way. */
  function kick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err) => o.log('webhook delivery pass failed (retried)', err))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          kick();
        }
      });
  }

  return {
    kick,
    /** Runs a pass now and waits until no pass is under way (tests: what is due has been sent). */
    async flush(): Promise<void> {
      kick();
      while (running) await running;
    },
    async start(): Promise<void> {
      if (!stopped) return;
      stopped = false;
      // On embedded PGlite this is the only process: a lease still held belongs to one that is gone.
      if (o.sole) await o.db.query(`UPDATE gw_webhook_deliveries SET lease_until = NULL WHERE state = 'pending' AND lease_until IS NOT NULL`);
      kick();
      timer ??= setInterval(kick, o.intervalMs ?? 1_000);
      timer.unref();
    },
    /** Stops looking and waits for the deliveries being sent. */
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
      await dispatcher.close();
    },
  };
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>;
