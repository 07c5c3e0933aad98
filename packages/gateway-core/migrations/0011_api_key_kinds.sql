-- @farebox/gateway-core, schema version 11: two kinds of API key (docs/api.md,
-- "Credentials and what each may do"). A `spend` key may call, search and read
-- its own balance, transactions and policy; a `manage` key may also manage
-- keys, connections, top-ups and publishing, like the signed-in owner.
-- Every key with a spending policy is a spend key, always: the keys that have
-- one now become spend keys, the others stay what they were (manage), and the
-- table refuses a policy on a manage key.
ALTER TABLE gw_api_keys ADD COLUMN kind TEXT NOT NULL DEFAULT 'manage' CHECK (kind IN ('spend', 'manage'));
UPDATE gw_api_keys SET kind = 'spend' WHERE limit_units IS NOT NULL OR allowed_services IS NOT NULL OR max_call_units IS NOT NULL;
ALTER TABLE gw_api_keys ADD CONSTRAINT gw_api_keys_policy_is_spend
  CHECK (kind = 'spend' OR (limit_units IS NULL AND allowed_services IS NULL AND max_call_units IS NULL));
