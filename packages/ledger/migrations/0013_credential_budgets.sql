-- @farebox/ledger, schema version 13: the in-flight budgets of credentials' spending policies.
-- A credential (an API key, an OAuth connection) may carry a spending limit
-- per period (a UTC day, week, month, or its whole life). Its budget for a
-- period is one row: `spent` (posted calls and wallet payments) plus `held`
-- (calls in flight) may not pass `lim`. A hold made under a policy adds its
-- amount to `held` in the statement that debits the credits (a CHECK
-- violation there refuses the hold as a whole: nothing is debited); its post
-- moves the posted amount to `spent` and gives the rest back; its void (a
-- refund, the reaper's, a dead instance's) gives it all back.
-- `lim` is the limit the last hold was placed under: the caller sends the
-- policy's current limit with each hold, so a lowered limit refuses the next
-- call at once. A hold records its budget row (`budget_credential`,
-- `budget_period`); holds without a policy have none and write no budget.
CREATE TABLE credential_budgets (
  credential  TEXT NOT NULL,
  -- `day:2026-11-26`, `week:2026-11-23` (its Monday), `month:2026-11`, `total`
  period      TEXT NOT NULL,
  lim         BIGINT NOT NULL CHECK (lim >= 0),
  spent       BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0),
  held        BIGINT NOT NULL DEFAULT 0 CHECK (held >= 0),
  CONSTRAINT credential_budget_limit CHECK (spent + held <= lim),
  PRIMARY KEY (credential, period)
);
ALTER TABLE holds ADD COLUMN budget_credential TEXT;
ALTER TABLE holds ADD COLUMN budget_period TEXT;
