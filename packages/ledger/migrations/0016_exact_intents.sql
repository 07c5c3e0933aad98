-- @farebox/ledger, schema version 16: the intent of each x402 `exact`
-- settlement, written before anything moves.
--
-- The platform's facilitator writes a pending intent (the payer, the nonce and
-- expiration ledger of the payer's authorization, what it pays for and the
-- network's ledger at that moment) before the transaction is submitted, once
-- per authorization: the network accepts an authorization's nonce once, so
-- (payer, nonce) names at most one transfer. After a successful settlement the
-- statement that records the payment and its earning also closes the intent
-- (`settled`, with its transaction); a settlement that moved nothing closes it
-- `failed` (a later settle of the same authorization may open it again). An
-- intent left pending (a crash, a database outage, an answer that never came)
-- is resolved by the gateway's reconciler from the chain: the transfer found
-- is recorded once with its transaction's hash, and an authorization that
-- expired without one is closed `never_settled`.
CREATE TABLE exact_intents (
  payer              TEXT NOT NULL,
  -- The authorization's nonce (a signed 64-bit integer, as text).
  nonce              TEXT NOT NULL CHECK (nonce ~ '^-?[0-9]{1,19}$'),
  -- The last ledger the authorization is valid in: no transfer can use it after.
  expiration_ledger  BIGINT NOT NULL CHECK (expiration_ledger > 0),
  -- The network's latest ledger when the intent was written: the transfer, if any, is in this ledger or a later one.
  start_ledger       BIGINT NOT NULL CHECK (start_ledger > 0),
  network            TEXT NOT NULL,
  asset              TEXT NOT NULL,
  pay_to             TEXT NOT NULL,
  service            TEXT NOT NULL,
  publisher_owner    TEXT NOT NULL,
  amount             BIGINT NOT NULL CHECK (amount > 0),
  state              TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'settled', 'failed', 'never_settled')),
  tx_hash            TEXT UNIQUE REFERENCES exact_payments (tx_hash),
  error              TEXT,
  -- When the reconciler must have resolved it (the authorization's expiry, estimated in time, plus its allowance):
  -- `verify()` names an intent still pending after it.
  resolve_by         TIMESTAMPTZ NOT NULL,
  -- The reconciler's lease: gateways checking intents at once do not ask the chain about the same one.
  checked_at         TIMESTAMPTZ,
  created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
  resolved_at        TIMESTAMPTZ,
  PRIMARY KEY (payer, nonce),
  CHECK ((state = 'settled') = (tx_hash IS NOT NULL)),
  CHECK ((state = 'pending') = (resolved_at IS NULL))
);
CREATE INDEX exact_intents_pending ON exact_intents (created_at) WHERE state = 'pending';

-- A settled intent stays settled, with its transaction: only a pending one is resolved, and a failed one opened again.
CREATE FUNCTION farebox_exact_intent_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'exact_intents are kept: DELETE refused' USING ERRCODE = 'FB001';
  END IF;
  IF OLD.state IN ('settled', 'never_settled') AND (NEW.state IS DISTINCT FROM OLD.state OR NEW.tx_hash IS DISTINCT FROM OLD.tx_hash) THEN
    RAISE EXCEPTION 'exact_intents: a % intent is final', OLD.state USING ERRCODE = 'FB001';
  END IF;
  IF NEW.payer <> OLD.payer OR NEW.nonce <> OLD.nonce THEN
    RAISE EXCEPTION 'exact_intents: payer and nonce are fixed' USING ERRCODE = 'FB001';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER exact_intents_guard BEFORE UPDATE OR DELETE ON exact_intents
  FOR EACH ROW EXECUTE FUNCTION farebox_exact_intent_guard();
