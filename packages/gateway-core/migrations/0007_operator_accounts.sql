-- @farebox/gateway-core, schema version 7: the operator role belongs to
-- accounts, never to e-mail addresses. A grant by e-mail (schema 4) could be
-- claimed by whoever signed up with that address first; grants are now made
-- for existing accounts only and kept by account id. Earlier grants whose
-- e-mail belongs to an account move to it; the rest were claimable and are
-- dropped.
CREATE TABLE gw_operator_grants (
  account_id  TEXT PRIMARY KEY REFERENCES gw_users (id),
  granted_by  TEXT NOT NULL,
  granted_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO gw_operator_grants (account_id, granted_by, granted_at)
  SELECT u.id, o.granted_by, o.granted_at FROM gw_operators o JOIN gw_users u ON u.email_normalized = o.email_normalized
  ON CONFLICT (account_id) DO NOTHING;
DROP TABLE gw_operators;
