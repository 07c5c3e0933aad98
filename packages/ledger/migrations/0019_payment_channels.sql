-- @farebox/ledger, schema version 19: MPP channel sessions, paid with vouchers on one-way payment channels.
--
-- An agent opens a one-way payment channel on Stellar: a Soroban contract that holds the agent's USDC deposit, the
-- recipient being the Farebox treasury. Each gateway call is paid with a voucher: the agent's Ed25519 signature over a
-- cumulative amount (the gateway checks the signature; the ledger counts the amounts). The treasury turns the best
-- voucher into money on chain with a settle or close transaction. One call is in flight per channel: the voucher of
-- a call of price p pays it only if its amount is exactly the amount already paid plus p, within the deposit; it is
-- reserved on the channel's row before the service runs, and posted (the channel's paid amount moves to it, a
-- payment row and its earning are written) or voided (nothing moves) when the call ends, each in one statement.

-- One row per channel contract: what the chain says of it (upserted from chain state) and what the ledger accepted.
CREATE TABLE payment_channels (
  -- The channel contract (C...).
  channel                 TEXT PRIMARY KEY,
  -- CAIP-2 network, e.g. `stellar:testnet`.
  network                 TEXT NOT NULL,
  -- The token contract (C...) of the deposit.
  token                   TEXT NOT NULL,
  -- Who deposited (the agent) and who may withdraw (the treasury).
  funder                  TEXT NOT NULL,
  recipient               TEXT NOT NULL,
  -- The Ed25519 public key that signs the vouchers (64 lower-case hex).
  commitment_key          TEXT NOT NULL CHECK (commitment_key ~ '^[0-9a-f]{64}$'),
  -- Ledgers between the funder's close_start and the refund.
  refund_waiting_period   BIGINT NOT NULL CHECK (refund_waiting_period >= 0),
  -- The deposit as last read from chain (base units): it only grows (a top-up), and a voucher never passes it.
  deposited               BIGINT NOT NULL CHECK (deposited >= 0),
  -- The ledger from which a started close takes effect (null: no close started).
  close_effective_ledger  BIGINT CHECK (close_effective_ledger IS NULL OR close_effective_ledger >= 0),
  -- `open`: vouchers accepted; `closing` (close_start seen on chain): no new vouchers; `closed` (closed or refunded on
  -- chain): final. The state only moves forward.
  state                   TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closing', 'closed')),
  -- The cumulative amount of the channel's last paid voucher and its signature: what the treasury can withdraw.
  -- Always the sum of the channel's payments (verify() checks it).
  paid                    BIGINT NOT NULL DEFAULT 0,
  paid_signature          TEXT,
  paid_at                 TIMESTAMPTZ,
  -- The cumulative amount the treasury's settle and close transactions took out of the channel (channel_withdrawals):
  -- only the earnings of vouchers it covers are in the treasury, and only those are claimed into settlement cycles.
  withdrawn               BIGINT NOT NULL DEFAULT 0,
  -- The voucher of the call in flight, reserved before the service runs: the call, the voucher's cumulative amount,
  -- the call's price and the fee part of it (splitFee, fixed at the reservation), the signature, the earning's
  -- service and owner, and the end of its lease (after it, the next reservation voids it).
  pending_call_id         TEXT,
  pending_amount          BIGINT,
  pending_price           BIGINT,
  pending_fee             BIGINT,
  pending_signature       TEXT,
  pending_service         TEXT,
  pending_publisher_owner TEXT,
  pending_until           TIMESTAMPTZ,
  created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
  CONSTRAINT channel_paid CHECK (paid >= 0 AND paid <= deposited AND (paid = 0) = (paid_signature IS NULL) AND (paid = 0) = (paid_at IS NULL)),
  CONSTRAINT channel_withdrawn CHECK (withdrawn >= 0 AND withdrawn <= paid),
  -- A pending voucher is whole, pays exactly its price on top of what is paid, and fits in the deposit.
  CONSTRAINT channel_pending CHECK (
    (pending_call_id IS NULL AND pending_amount IS NULL AND pending_price IS NULL AND pending_fee IS NULL AND pending_signature IS NULL
      AND pending_service IS NULL AND pending_publisher_owner IS NULL AND pending_until IS NULL)
    OR (pending_call_id IS NOT NULL AND pending_signature IS NOT NULL AND pending_service IS NOT NULL AND pending_publisher_owner IS NOT NULL
      AND pending_until IS NOT NULL AND pending_price > 0 AND pending_fee >= 0 AND pending_fee <= pending_price
      AND pending_amount = paid + pending_price AND pending_amount <= deposited AND state <> 'closed')
  )
);
-- The watcher's list: channels whose paid vouchers the treasury has not all withdrawn, and channels closing.
CREATE INDEX payment_channels_due ON payment_channels (channel) WHERE paid > withdrawn OR state = 'closing';

-- The channel's row is kept and its history only moves forward: what the chain fixed at the contract's creation never
-- changes, the deposit, the paid and withdrawn amounts never go down, paid moves only to the pending voucher's amount
-- (a post), and the state never goes back. (The trigger's condition is its WHEN clause: a reservation, a post or a
-- void calls no function.)
CREATE FUNCTION farebox_payment_channel_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR TG_OP = 'TRUNCATE' THEN
    RAISE EXCEPTION 'payment_channels are kept: % refused', TG_OP USING ERRCODE = 'FB001';
  END IF;
  RAISE EXCEPTION 'payment_channels: a channel''s terms are fixed, its amounts only grow, paid moves only to the pending voucher and the state only forward'
    USING ERRCODE = 'FB001';
END;
$$;
CREATE TRIGGER payment_channels_guard BEFORE UPDATE ON payment_channels
  FOR EACH ROW WHEN (
    NEW.channel <> OLD.channel OR NEW.network <> OLD.network OR NEW.token <> OLD.token OR NEW.funder <> OLD.funder
    OR NEW.recipient <> OLD.recipient OR NEW.commitment_key <> OLD.commitment_key OR NEW.refund_waiting_period <> OLD.refund_waiting_period
    OR NEW.created_at <> OLD.created_at
    OR NEW.deposited < OLD.deposited OR NEW.withdrawn < OLD.withdrawn
    OR (NEW.paid <> OLD.paid AND NEW.paid IS DISTINCT FROM OLD.pending_amount)
    OR (NEW.paid_signature IS DISTINCT FROM OLD.paid_signature AND NEW.paid_signature IS DISTINCT FROM OLD.pending_signature)
    OR (OLD.state = 'closed' AND NEW.state <> 'closed') OR (OLD.state = 'closing' AND NEW.state = 'open')
  ) EXECUTE FUNCTION farebox_payment_channel_guard();
CREATE TRIGGER payment_channels_no_delete BEFORE DELETE ON payment_channels
  FOR EACH ROW EXECUTE FUNCTION farebox_payment_channel_guard();
CREATE TRIGGER payment_channels_no_truncate BEFORE TRUNCATE ON payment_channels
  FOR EACH STATEMENT EXECUTE FUNCTION farebox_payment_channel_guard();

-- The journal of paid vouchers: one row per posted call, written by the statement that moves the channel's paid to
-- the voucher's amount and records the call's earning (gross = the call's price). A voucher is counted once: its
-- cumulative amount is unique per channel. Append-only.
CREATE TABLE channel_payments (
  id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  channel          TEXT NOT NULL REFERENCES payment_channels (channel),
  call_id          TEXT NOT NULL,
  -- The voucher's cumulative amount (the channel's paid after this payment) and the call's price (what it added).
  amount           BIGINT NOT NULL CHECK (amount > 0),
  price            BIGINT NOT NULL CHECK (price > 0 AND price <= amount),
  signature        TEXT NOT NULL,
  service          TEXT NOT NULL,
  publisher_owner  TEXT NOT NULL,
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (channel, amount)
);

CREATE FUNCTION farebox_channel_payments_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'channel_payments is append-only: % refused', TG_OP USING ERRCODE = 'FB001';
END;
$$;
CREATE TRIGGER channel_payments_append_only BEFORE UPDATE OR DELETE ON channel_payments
  FOR EACH ROW EXECUTE FUNCTION farebox_channel_payments_immutable();
CREATE TRIGGER channel_payments_no_truncate BEFORE TRUNCATE ON channel_payments
  FOR EACH STATEMENT EXECUTE FUNCTION farebox_channel_payments_immutable();

-- The treasury's settle and close transactions on a channel, once per transaction: the cumulative amount each took
-- out of the channel into the treasury. Recorded in the statement that raises the channel's withdrawn to it (a close
-- also closes the channel). Append-only.
CREATE TABLE channel_withdrawals (
  tx_hash     TEXT PRIMARY KEY,
  channel     TEXT NOT NULL REFERENCES payment_channels (channel),
  amount      BIGINT NOT NULL CHECK (amount >= 0),
  kind        TEXT NOT NULL CHECK (kind IN ('settle', 'close')),
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX channel_withdrawals_channel ON channel_withdrawals (channel, created_at);

CREATE FUNCTION farebox_channel_withdrawals_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'channel_withdrawals is append-only: % refused', TG_OP USING ERRCODE = 'FB001';
END;
$$;
CREATE TRIGGER channel_withdrawals_append_only BEFORE UPDATE OR DELETE ON channel_withdrawals
  FOR EACH ROW EXECUTE FUNCTION farebox_channel_withdrawals_immutable();
CREATE TRIGGER channel_withdrawals_no_truncate BEFORE TRUNCATE ON channel_withdrawals
  FOR EACH STATEMENT EXECUTE FUNCTION farebox_channel_withdrawals_immutable();

-- An earning comes from exactly one source: a posted hold (credits), an exact payment's transaction, or (now) a
-- channel payment (unique: one earning per paid voucher), which has no payer account.
ALTER TABLE earnings ADD COLUMN channel_payment_id BIGINT UNIQUE REFERENCES channel_payments (id);
ALTER TABLE earnings DROP CONSTRAINT earning_source;
ALTER TABLE earnings ADD CONSTRAINT earning_source CHECK (
  (hold_id IS NOT NULL AND payer_account_id IS NOT NULL AND exact_tx_hash IS NULL AND channel_payment_id IS NULL)
  OR (hold_id IS NULL AND payer_account_id IS NULL AND exact_tx_hash IS NOT NULL AND channel_payment_id IS NULL)
  OR (hold_id IS NULL AND payer_account_id IS NULL AND exact_tx_hash IS NULL AND channel_payment_id IS NOT NULL)
);

-- The earnings guard of schema 17, and: the channel payment is fixed too.
DROP TRIGGER earnings_guard ON earnings;
CREATE TRIGGER earnings_guard BEFORE UPDATE ON earnings
  FOR EACH ROW WHEN (
    NEW.hold_id IS DISTINCT FROM OLD.hold_id OR NEW.payer_account_id IS DISTINCT FROM OLD.payer_account_id
    OR NEW.exact_tx_hash IS DISTINCT FROM OLD.exact_tx_hash
    OR NEW.channel_payment_id IS DISTINCT FROM OLD.channel_payment_id
    OR NEW.publisher_owner <> OLD.publisher_owner OR NEW.service <> OLD.service
    OR NEW.gross <> OLD.gross
    OR ((NEW.fee <> OLD.fee OR NEW.net <> OLD.net) AND NOT (OLD.cycle_id IS NULL AND NEW.cycle_id IS NOT NULL))
    OR NEW.created_at <> OLD.created_at
    OR (OLD.cycle_id IS NOT NULL AND NEW.cycle_id IS DISTINCT FROM OLD.cycle_id)
    OR (OLD.funding_batch_id IS NOT NULL AND NEW.funding_batch_id IS DISTINCT FROM OLD.funding_batch_id)
    OR (OLD.reversed_at IS NOT NULL AND NEW.reversed_at IS DISTINCT FROM OLD.reversed_at)
  ) EXECUTE FUNCTION farebox_earning_guard();

-- A channel payment's money is in the treasury only once a settle or close withdrew its voucher's amount: before
-- that its earning is claimed by no cycle (the claim's own filter skips it; this refuses any other statement). The
-- function runs only for the claim of a channel earning.
CREATE FUNCTION farebox_earning_channel_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM channel_payments p JOIN payment_channels c ON c.channel = p.channel
              WHERE p.id = NEW.channel_payment_id AND c.withdrawn >= p.amount) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'earnings: a channel payment''s earning is claimed by no cycle before the treasury withdrew its voucher' USING ERRCODE = 'FB001';
END;
$$;
CREATE TRIGGER earnings_channel_guard BEFORE UPDATE ON earnings
  FOR EACH ROW WHEN (OLD.channel_payment_id IS NOT NULL AND OLD.cycle_id IS NULL AND NEW.cycle_id IS NOT NULL)
  EXECUTE FUNCTION farebox_earning_channel_guard();
