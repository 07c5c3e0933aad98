-- @farebox/ledger, schema version 15: x402 `exact` payments settled by the
-- platform's facilitator, and the fees it sponsors per payer and UTC day.
--
-- An `exact` payment is one on-chain USDC transfer from the payer's wallet to
-- the treasury; no credits move. When the facilitator has settled it, the
-- amount that moved is recorded here once per transaction and becomes the
-- service's earning, like a posted call's: the next settlement cycle of the
-- owner claims it, the treasury funds the escrow and the release pays the
-- owner 95 % and the platform 5 %.
CREATE TABLE exact_payments (
  tx_hash          TEXT PRIMARY KEY,
  network          TEXT NOT NULL,
  asset            TEXT NOT NULL,
  payer            TEXT NOT NULL,
  pay_to           TEXT NOT NULL,
  service          TEXT NOT NULL,
  publisher_owner  TEXT NOT NULL,
  amount           BIGINT NOT NULL CHECK (amount > 0),
  -- The network fee the facilitator paid for the transaction (stroops).
  fee_charged      BIGINT NOT NULL CHECK (fee_charged >= 0),
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX exact_payments_payer ON exact_payments (payer, created_at);

CREATE FUNCTION farebox_exact_payments_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'exact_payments is append-only: % refused', TG_OP USING ERRCODE = 'FB001';
END;
$$;
CREATE TRIGGER exact_payments_append_only BEFORE UPDATE OR DELETE ON exact_payments
  FOR EACH ROW EXECUTE FUNCTION farebox_exact_payments_immutable();
CREATE TRIGGER exact_payments_no_truncate BEFORE TRUNCATE ON exact_payments
  FOR EACH STATEMENT EXECUTE FUNCTION farebox_exact_payments_immutable();

-- An earning comes from a posted hold (a call paid with credits) or from an
-- exact payment (its transaction, unique: one earning per transaction), never
-- both; an exact payment's earning has no payer account.
ALTER TABLE earnings ALTER COLUMN hold_id DROP NOT NULL, ALTER COLUMN payer_account_id DROP NOT NULL;
ALTER TABLE earnings ADD COLUMN exact_tx_hash TEXT UNIQUE REFERENCES exact_payments (tx_hash);
ALTER TABLE earnings ADD CONSTRAINT earning_source CHECK (
  (hold_id IS NOT NULL AND payer_account_id IS NOT NULL AND exact_tx_hash IS NULL)
  OR (hold_id IS NULL AND payer_account_id IS NULL AND exact_tx_hash IS NOT NULL)
);

-- The guard compared the references with `<>`, which lets a NULL through:
-- now every fixed column is compared with IS DISTINCT FROM, the new one too,
-- and the function refuses whatever its trigger's condition lets reach it.
CREATE OR REPLACE FUNCTION farebox_earning_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'earnings are append-only: DELETE refused' USING ERRCODE = 'FB001';
  END IF;
  RAISE EXCEPTION 'earnings: only an unset cycle or funding batch may be assigned' USING ERRCODE = 'FB001';
END;
$$;
DROP TRIGGER earnings_guard ON earnings;
CREATE TRIGGER earnings_guard BEFORE UPDATE ON earnings
  FOR EACH ROW WHEN (
    NEW.hold_id IS DISTINCT FROM OLD.hold_id OR NEW.payer_account_id IS DISTINCT FROM OLD.payer_account_id
    OR NEW.exact_tx_hash IS DISTINCT FROM OLD.exact_tx_hash
    OR NEW.publisher_owner <> OLD.publisher_owner OR NEW.service <> OLD.service
    OR NEW.gross <> OLD.gross
    OR ((NEW.fee <> OLD.fee OR NEW.net <> OLD.net) AND NOT (OLD.cycle_id IS NULL AND NEW.cycle_id IS NOT NULL))
    OR NEW.created_at <> OLD.created_at
    OR (OLD.cycle_id IS NOT NULL AND NEW.cycle_id IS DISTINCT FROM OLD.cycle_id)
    OR (OLD.funding_batch_id IS NOT NULL AND NEW.funding_batch_id IS DISTINCT FROM OLD.funding_batch_id)
  ) EXECUTE FUNCTION farebox_earning_guard();

-- Network fees the facilitator sponsors, per payer (the G... or C... address
-- that signed the transfer) and UTC day, in stroops: a settlement reserves its
-- transaction's maximum fee here before it is submitted, in one statement that
-- refuses to pass the bound (INSERT ... ON CONFLICT DO UPDATE ... WHERE), and
-- gives back what the network did not charge.
CREATE TABLE sponsored_fees (
  payer     TEXT NOT NULL,
  day       DATE NOT NULL,
  total     BIGINT NOT NULL CHECK (total >= 0),
  settles   INTEGER NOT NULL DEFAULT 0 CHECK (settles >= 0),
  PRIMARY KEY (payer, day)
);
