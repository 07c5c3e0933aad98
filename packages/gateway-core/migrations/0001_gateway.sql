-- @farebox/gateway-core, schema version 1: users, sessions, API keys and the
-- services registered from the dashboard. Credits live in @farebox/ledger's
-- tables; a user's id is also their ledger account id.

CREATE TABLE gw_users (
  id                     TEXT PRIMARY KEY,
  email                  TEXT NOT NULL,
  email_normalized       TEXT NOT NULL UNIQUE,
  password_hash          TEXT NOT NULL,
  wallet_address         TEXT NOT NULL,
  -- Set once the wallet is funded and its USDC trustline is in place.
  wallet_ready_at        TIMESTAMPTZ,
  is_publisher           BOOLEAN NOT NULL DEFAULT false,
  publisher_name         TEXT,
  publisher_activated_at TIMESTAMPTZ,
  created_at             TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Session cookies: only the SHA-256 of the cookie value is stored.
CREATE TABLE gw_sessions (
  token_hash    TEXT PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES gw_users (id),
  csrf_token    TEXT NOT NULL,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX gw_sessions_user ON gw_sessions (user_id);

-- API keys: only the SHA-256 of the key is stored; `prefix` is the non-secret start shown in lists.
CREATE TABLE gw_api_keys (
  id            TEXT PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES gw_users (id),
  name          TEXT NOT NULL,
  prefix        TEXT NOT NULL,
  key_hash      TEXT NOT NULL UNIQUE,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_used_at  TIMESTAMPTZ,
  revoked_at    TIMESTAMPTZ
);
CREATE INDEX gw_api_keys_user ON gw_api_keys (user_id, created_at DESC);

-- Services registered through /v1/agents (signed with the account's wallet).
CREATE TABLE gw_services (
  service        TEXT PRIMARY KEY,
  user_id        TEXT NOT NULL REFERENCES gw_users (id),
  owner_wallet   TEXT NOT NULL,
  tx_hash        TEXT,
  created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
  removed_at     TIMESTAMPTZ
);
CREATE INDEX gw_services_user ON gw_services (user_id) WHERE removed_at IS NULL;
