-- @farebox/gateway-core, schema version 14: signed webhooks (docs/webhooks.md).
--
-- gw_webhook_endpoints: where an account wants its events. The signing secret
-- is sealed (AES-256-GCM under a key derived from the keystore key,
-- FAREBOX_KEYSTORE_KEY; the endpoint's id is the additional data): the
-- gateway must sign with it, so it cannot be only hashed. `secret_prefix` is
-- its first characters, shown in lists. After a rotation the previous secret
-- may stay valid (deliveries carry a signature under each) until
-- `previous_expires_at`.
CREATE TABLE gw_webhook_endpoints (
  id                   TEXT PRIMARY KEY,
  account_id           TEXT NOT NULL REFERENCES gw_users (id),
  url                  TEXT NOT NULL,
  events               TEXT[] NOT NULL,
  secret_sealed        TEXT NOT NULL,
  secret_prefix        TEXT NOT NULL,
  previous_sealed      TEXT,
  previous_expires_at  TIMESTAMPTZ,
  created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
  rotated_at           TIMESTAMPTZ,
  deleted_at           TIMESTAMPTZ
);
CREATE INDEX gw_webhook_endpoints_account ON gw_webhook_endpoints (account_id) WHERE deleted_at IS NULL;

-- The outbox: one row per event, written in the same transaction as what it
-- reports (a top-up credited, a cycle released ...), only when the account has
-- an endpoint subscribed to its type. `body` is the exact JSON sent (every
-- attempt and redelivery sends the same bytes). `dedupe_key`: an event that
-- must happen once (a budget's threshold in a period) names itself.
CREATE TABLE gw_webhook_events (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL,
  type        TEXT NOT NULL,
  body        TEXT NOT NULL,
  dedupe_key  TEXT UNIQUE,
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One delivery per event and endpoint (and one more per redelivery). A
-- gateway's worker claims due rows (FOR UPDATE SKIP LOCKED) by leasing them
-- (`lease_until`, and `attempts` counts the claims: a result is recorded only
-- by the claim that is still current), sends, and records the result: `delivered`, or
-- `pending` again at `next_attempt_at` (exponential backoff), or `failed`
-- once `expires_at` (a day after the event) has passed. Deleting an endpoint
-- cancels what it had pending.
CREATE TABLE gw_webhook_deliveries (
  id               TEXT PRIMARY KEY,
  endpoint_id      TEXT NOT NULL REFERENCES gw_webhook_endpoints (id),
  event_id         TEXT NOT NULL REFERENCES gw_webhook_events (id),
  state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
  lease_until      TIMESTAMPTZ,
  expires_at       TIMESTAMPTZ NOT NULL DEFAULT now() + interval '1 day',
  redelivery_of    TEXT,
  last_status      INTEGER,
  last_error       TEXT,
  delivered_at     TIMESTAMPTZ,
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX gw_webhook_deliveries_due ON gw_webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX gw_webhook_deliveries_endpoint ON gw_webhook_deliveries (endpoint_id, created_at DESC);

-- The delivery log: one row per finished attempt (what the receiver answered, or why nothing was).
CREATE TABLE gw_webhook_attempts (
  delivery_id  TEXT NOT NULL REFERENCES gw_webhook_deliveries (id),
  attempt      INTEGER NOT NULL,
  at           TIMESTAMPTZ NOT NULL DEFAULT now(),
  status       INTEGER,
  error        TEXT,
  duration_ms  INTEGER NOT NULL,
  response     TEXT,
  PRIMARY KEY (delivery_id, attempt)
);

-- Events are addressed to the account whose wallet a settlement cycle or a dispute names.
CREATE INDEX gw_users_wallet_address ON gw_users (wallet_address);
