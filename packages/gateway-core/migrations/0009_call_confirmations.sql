-- @farebox/gateway-core, schema version 9: paid calls the user confirms (docs/oauth.md, "Calls the user confirms").
-- Each OAuth connection asks the user before a call_agent priced above its
-- threshold, or one that would leave less than a share of its spending limit.
-- A connection without a row has the defaults: above 0.10 USD, or under 10 %.
CREATE TABLE gw_oauth_call_confirmations (
  connection_id  TEXT PRIMARY KEY REFERENCES gw_oauth_connections (id),
  -- Base units; a call priced above it asks first (0: every paid call; NULL: never by price).
  above_units    BIGINT CHECK (above_units IS NULL OR above_units >= 0),
  -- A call that would leave less than this share of the limit (percent) asks first (0: never).
  below_left_pct SMALLINT NOT NULL CHECK (below_left_pct BETWEEN 0 AND 100),
  updated_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One confirmation of one call: bound to the connection, the service and the
-- highest price the user saw, single use, short-lived. `elicitation`: asked
-- through MCP (the answer comes back with the retried request, whose
-- requestState is this id); `link`: approved on the dashboard's
-- /approve/<id>, then used by the call_agent retry that names it.
CREATE TABLE gw_call_approvals (
  id             TEXT PRIMARY KEY,
  kind           TEXT NOT NULL CHECK (kind IN ('elicitation', 'link')),
  connection_id  TEXT NOT NULL REFERENCES gw_oauth_connections (id),
  user_id        TEXT NOT NULL REFERENCES gw_users (id),
  service        TEXT NOT NULL,
  max_units      BIGINT NOT NULL CHECK (max_units >= 0),
  status         TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'used')),
  -- Epoch milliseconds on the gateway's clock (the expiry is decided by it).
  created_ms     BIGINT NOT NULL,
  expires_ms     BIGINT NOT NULL,
  decided_ms     BIGINT,
  used_ms        BIGINT
);
CREATE INDEX gw_call_approvals_connection ON gw_call_approvals (connection_id, created_ms);
