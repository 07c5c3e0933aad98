-- @farebox/gateway-core, schema version 8: spending policies on API keys and OAuth connections.
-- A policy: a limit (base units) per period (`day`, `week`, `month` in UTC,
-- or `total`), the services the credential may call (NULL: all), and the
-- highest price of one call (NULL: none). The limit's in-flight budget is the
-- ledger's (`credential_budgets`, ledger schema 13), keyed by the credential's id.
ALTER TABLE gw_api_keys ADD COLUMN limit_units BIGINT CHECK (limit_units IS NULL OR limit_units > 0);
ALTER TABLE gw_api_keys ADD COLUMN limit_period TEXT CHECK (limit_period IN ('day', 'week', 'month', 'total'));
ALTER TABLE gw_api_keys ADD COLUMN allowed_services TEXT[];
ALTER TABLE gw_api_keys ADD COLUMN max_call_units BIGINT CHECK (max_call_units IS NULL OR max_call_units > 0);
ALTER TABLE gw_oauth_connections ADD COLUMN limit_units BIGINT CHECK (limit_units IS NULL OR limit_units > 0);
ALTER TABLE gw_oauth_connections ADD COLUMN limit_period TEXT CHECK (limit_period IN ('day', 'week', 'month', 'total'));
ALTER TABLE gw_oauth_connections ADD COLUMN allowed_services TEXT[];
ALTER TABLE gw_oauth_connections ADD COLUMN max_call_units BIGINT CHECK (max_call_units IS NULL OR max_call_units > 0);

-- The connections' daily limits become policies of period `day`, and what
-- they spent (or held) on each UTC day since yesterday becomes that day's
-- budget, so the limit goes on where it was. `daily_limit` and
-- gw_oauth_spend(_holds) are no longer written.
UPDATE gw_oauth_connections SET limit_units = daily_limit, limit_period = 'day' WHERE daily_limit IS NOT NULL;
INSERT INTO credential_budgets (credential, period, lim, spent)
SELECT s.connection_id, 'day:' || to_char(s.day, 'YYYY-MM-DD'), GREATEST(c.daily_limit, s.spent), s.spent
  FROM gw_oauth_spend s JOIN gw_oauth_connections c ON c.id = s.connection_id
 WHERE c.daily_limit IS NOT NULL AND s.spent > 0 AND s.day >= (now() AT TIME ZONE 'UTC')::date - 1
ON CONFLICT (credential, period) DO NOTHING;
