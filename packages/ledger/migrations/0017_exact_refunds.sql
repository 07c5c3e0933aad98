-- @farebox/ledger, schema version 17: refunds of x402 `exact` payments.
--
-- A service that settles before its handler runs (`@farebox/provider`'s
-- `exact: { settle: 'before-handler' }`) and then fails has the payment sent
-- back from the treasury to the payer. The refund's intent and the reversal of
-- the payment's earning are written by one statement: the earning gets
-- `reversed_at` (it is never claimed into a settlement cycle, so no batch pays
-- it out and no fee is taken on it) and `exact_refunds` gets one row per
-- payment (its primary key: a payment is refunded at most once). The refund
-- transaction (treasury -> payer, the amount paid) is recorded signed before it
-- is submitted; the row is closed `refunded` with it. A refund left pending (a
-- crash, an outage) is finished by the gateway's refund reconciler from the
-- chain: the recorded transaction is confirmed, resubmitted while it can still
-- apply, or replaced when it never can.
ALTER TABLE earnings ADD COLUMN reversed_at TIMESTAMPTZ;
-- Only an exact payment's earning that no cycle claimed can be reversed, and a reversed one is never claimed.
ALTER TABLE earnings ADD CONSTRAINT earning_reversal CHECK (reversed_at IS NULL OR (exact_tx_hash IS NOT NULL AND cycle_id IS NULL));

CREATE TABLE exact_refunds (
  payment_tx_hash  TEXT PRIMARY KEY REFERENCES exact_payments (tx_hash),
  -- The payment's earning, reversed by the same statement (no foreign key on earnings, as in 0004 and 0007: verify() checks it).
  earning_id       BIGINT NOT NULL UNIQUE,
  network          TEXT NOT NULL,
  asset            TEXT NOT NULL,
  service          TEXT NOT NULL,
  publisher_owner  TEXT NOT NULL,
  -- Who receives the refund (the payment's payer) and how much (the payment's amount, in full).
  payer            TEXT NOT NULL,
  amount           BIGINT NOT NULL CHECK (amount > 0),
  -- The owner's signed request: the key that signed it and the time it names (epoch ms).
  requested_by     TEXT NOT NULL,
  requested_at_ms  BIGINT NOT NULL,
  state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'refunded')),
  -- The refund transaction, signed and recorded before it is submitted (replaced only when it can never apply).
  signed_hash      TEXT,
  signed_xdr       TEXT,
  refund_tx_hash   TEXT UNIQUE,
  error            TEXT,
  checked_at       TIMESTAMPTZ,
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  resolved_at      TIMESTAMPTZ,
  CHECK ((state = 'refunded') = (refund_tx_hash IS NOT NULL)),
  CHECK ((state = 'pending') = (resolved_at IS NULL)),
  CHECK ((signed_hash IS NULL) = (signed_xdr IS NULL))
);
CREATE INDEX exact_refunds_pending ON exact_refunds (created_at) WHERE state = 'pending';

CREATE FUNCTION farebox_exact_refund_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'exact_refunds are kept: DELETE refused' USING ERRCODE = 'FB001';
  END IF;
  IF OLD.state = 'refunded' AND (NEW.state IS DISTINCT FROM OLD.state OR NEW.refund_tx_hash IS DISTINCT FROM OLD.refund_tx_hash) THEN
    RAISE EXCEPTION 'exact_refunds: a refunded payment is final' USING ERRCODE = 'FB001';
  END IF;
  IF NEW.payment_tx_hash <> OLD.payment_tx_hash OR NEW.earning_id <> OLD.earning_id OR NEW.payer <> OLD.payer OR NEW.amount <> OLD.amount
     OR NEW.asset <> OLD.asset OR NEW.publisher_owner <> OLD.publisher_owner THEN
    RAISE EXCEPTION 'exact_refunds: what is refunded, to whom and how much are fixed' USING ERRCODE = 'FB001';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER exact_refunds_guard BEFORE UPDATE OR DELETE ON exact_refunds
  FOR EACH ROW EXECUTE FUNCTION farebox_exact_refund_guard();

-- The earnings guard of schema 15, and: a reversal is final (set once, never cleared or moved).
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
    OR (OLD.reversed_at IS NOT NULL AND NEW.reversed_at IS DISTINCT FROM OLD.reversed_at)
  ) EXECUTE FUNCTION farebox_earning_guard();
