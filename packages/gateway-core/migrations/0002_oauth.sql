-- @farebox/gateway-core, schema version 2: the OAuth 2.1 authorization server
-- (clients, connections, codes, tokens) and the per-connection daily spending.
-- Every secret (client secret, code, access and refresh token) is stored only
-- as its SHA-256; several gateways share this state through the database.

-- Clients registered with RFC 7591 dynamic client registration.
CREATE TABLE gw_oauth_clients (
  client_id                  TEXT PRIMARY KEY,
  -- SHA-256 (hex) of the client secret; NULL for public clients (method `none`).
  secret_hash                TEXT,
  token_endpoint_auth_method TEXT NOT NULL CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
  client_name                TEXT NOT NULL,
  redirect_uris              JSONB NOT NULL,
  -- The registered metadata as returned to the client (no secret).
  metadata                   JSONB NOT NULL,
  created_at                 TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- An app a user authorized: what the consent screen granted. Disconnecting sets revoked_at.
CREATE TABLE gw_oauth_connections (
  id            TEXT PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES gw_users (id),
  client_id     TEXT NOT NULL REFERENCES gw_oauth_clients (client_id),
  scopes        TEXT NOT NULL,
  -- Daily spending limit in base units (UTC day); NULL means no limit.
  daily_limit   BIGINT CHECK (daily_limit IS NULL OR daily_limit > 0),
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_used_at  TIMESTAMPTZ,
  revoked_at    TIMESTAMPTZ
);
CREATE UNIQUE INDEX gw_oauth_connections_live ON gw_oauth_connections (user_id, client_id) WHERE revoked_at IS NULL;

-- Authorization codes: single use. `family_id` names the grant; every token issued from it carries it.
CREATE TABLE gw_oauth_codes (
  code_hash       TEXT PRIMARY KEY,
  family_id       TEXT NOT NULL UNIQUE,
  connection_id   TEXT NOT NULL REFERENCES gw_oauth_connections (id),
  client_id       TEXT NOT NULL,
  redirect_uri    TEXT NOT NULL,
  code_challenge  TEXT NOT NULL,
  scopes          TEXT NOT NULL,
  resource        TEXT NOT NULL,
  expires_at      TIMESTAMPTZ NOT NULL,
  used_at         TIMESTAMPTZ,
  created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Access and refresh tokens. A refresh token is rotated once (rotated_at);
-- `successor` holds the pair it was rotated into, encrypted with a key derived
-- from the rotated token itself, so a retry inside the grace window gets the
-- same pair back and nobody without that token can read it.
CREATE TABLE gw_oauth_tokens (
  token_hash     TEXT PRIMARY KEY,
  kind           TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
  family_id      TEXT NOT NULL,
  connection_id  TEXT NOT NULL REFERENCES gw_oauth_connections (id),
  client_id      TEXT NOT NULL,
  scopes         TEXT NOT NULL,
  resource       TEXT NOT NULL,
  expires_at     TIMESTAMPTZ NOT NULL,
  created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
  rotated_at     TIMESTAMPTZ,
  successor      TEXT,
  revoked_at     TIMESTAMPTZ
);
CREATE INDEX gw_oauth_tokens_family ON gw_oauth_tokens (family_id);
CREATE INDEX gw_oauth_tokens_connection ON gw_oauth_tokens (connection_id);

-- What a connection spent (or has reserved for calls in flight) per UTC day, in base units.
CREATE TABLE gw_oauth_spend (
  connection_id  TEXT NOT NULL REFERENCES gw_oauth_connections (id),
  day            DATE NOT NULL,
  spent          BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0),
  PRIMARY KEY (connection_id, day)
);

-- Ledger holds placed by a connection's calls: voiding one gives its amount back to the day it was reserved on.
CREATE TABLE gw_oauth_spend_holds (
  hold_id        TEXT PRIMARY KEY,
  connection_id  TEXT NOT NULL,
  day            DATE NOT NULL,
  amount         BIGINT NOT NULL
);
