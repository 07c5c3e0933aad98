-- @farebox/ledger, schema version 2: payments made from an account's own
-- on-chain wallet (the gateway's wallet path). No credits move for them, so
-- they are not holds: a row records the intent before anything is sent on
-- chain and its outcome after.
--   kind 'call'  : the call was paid through an escrow funded by the wallet;
--   kind 'topup' : the wallet paid the treasury a shortfall that became credits
--                  (the combined credits + wallet case).
CREATE TABLE wallet_payments (
  id               UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id       TEXT NOT NULL REFERENCES accounts (id),
  kind             TEXT NOT NULL CHECK (kind IN ('call', 'topup')),
  call_id          TEXT NOT NULL,
  service          TEXT,
  publisher_owner  TEXT,
  amount           BIGINT NOT NULL CHECK (amount > 0),
  state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'completed', 'failed')),
  escrow_id        TEXT,
  tx_hash          TEXT,
  explorer_url     TEXT,
  error            TEXT,
  data             JSONB NOT NULL DEFAULT '{}'::jsonb,
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  resolved_at      TIMESTAMPTZ,
  CHECK ((state = 'pending') = (resolved_at IS NULL))
);
CREATE UNIQUE INDEX wallet_payments_call ON wallet_payments (account_id, call_id, kind);
CREATE INDEX wallet_payments_account ON wallet_payments (account_id, created_at DESC, id);
CREATE INDEX wallet_payments_pending ON wallet_payments (created_at) WHERE state = 'pending';
