-- @farebox/ledger, schema version 10: every credit a wallet payment backs has
-- one on-chain source, and the database enforces it.
--
-- A credit for USDC paid from an account's wallet to the treasury (a paid
-- top-up, or the wallet path's shortfall) names its transaction in the
-- journal (`reference = 'wallet:' || tx_hash`). Before this version nothing
-- made that reference unique: racing top-ups that built one envelope each
-- credited the single transaction that applied once per request. Now the
-- credit and a row here are written in one transaction, and the primary key
-- refuses a second credit for the same transaction (on any account).
CREATE TABLE wallet_credits (
  tx_hash     TEXT PRIMARY KEY,
  -- The order claims were written in: the chain audit pages through them by it.
  seq         BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  payment_id  UUID NOT NULL UNIQUE REFERENCES wallet_payments (id),
  account_id  TEXT NOT NULL,
  amount      BIGINT NOT NULL CHECK (amount > 0),
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Credits written before this version: the first completed payment of each
-- transaction claims it. Any other credit of the same transaction has no row
-- here, and `verify()` names it (kind `wallet-credit`).
INSERT INTO wallet_credits (tx_hash, payment_id, account_id, amount, created_at)
SELECT DISTINCT ON (tx_hash) tx_hash, id, account_id, amount, COALESCE(resolved_at, created_at)
  FROM wallet_payments
 WHERE kind = 'topup' AND state = 'completed' AND tx_hash IS NOT NULL
 ORDER BY tx_hash, resolved_at, id;

-- Like the journal, append-only.
CREATE FUNCTION farebox_wallet_credits_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'wallet_credits is append-only: % refused', TG_OP USING ERRCODE = 'FB001';
END;
$$;
CREATE TRIGGER wallet_credits_append_only BEFORE UPDATE OR DELETE ON wallet_credits
  FOR EACH ROW EXECUTE FUNCTION farebox_wallet_credits_immutable();
CREATE TRIGGER wallet_credits_no_truncate BEFORE TRUNCATE ON wallet_credits
  FOR EACH STATEMENT EXECUTE FUNCTION farebox_wallet_credits_immutable();
