-- @farebox/gateway-core, schema version 5: a new account's wallet is set up
-- on chain (created, USDC trustline) by a durable background job that starts
-- at sign-up and survives restarts: `wallet_ready_at` (schema 1) marks it
-- done; these columns schedule the attempts, shared by every gateway on the
-- database (an attempt leases the row until `wallet_next_attempt_at`).
ALTER TABLE gw_users ADD COLUMN wallet_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE gw_users ADD COLUMN wallet_next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now();
ALTER TABLE gw_users ADD COLUMN wallet_error TEXT;
CREATE INDEX gw_users_wallet_pending ON gw_users (wallet_next_attempt_at) WHERE wallet_ready_at IS NULL;
