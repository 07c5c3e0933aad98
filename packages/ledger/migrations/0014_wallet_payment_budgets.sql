-- @farebox/ledger, schema version 14: a wallet payment carries the budget it
-- is reserved against.
-- A wallet-path call made with a credential that has a spending limit counts
-- against the credential's budget (0013) like a hold: its amount is added to
-- the budget's `held` in the transaction that records the payment (a CHECK
-- violation refuses both: nothing is recorded, nothing is paid), and the
-- transaction that resolves the payment settles it: `completed` moves the
-- amount to `spent`, `failed` gives it back. So a payment a crash left pending
-- gives its reservation back (or spends it) when reconciliation resolves it,
-- instead of keeping it reserved for the rest of the period.
ALTER TABLE wallet_payments ADD COLUMN budget_credential TEXT;
ALTER TABLE wallet_payments ADD COLUMN budget_period TEXT;
ALTER TABLE wallet_payments ADD CONSTRAINT wallet_payment_budget CHECK ((budget_credential IS NULL) = (budget_period IS NULL));
