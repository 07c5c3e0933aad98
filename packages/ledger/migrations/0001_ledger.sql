-- @farebox/ledger, schema version 1.
-- Money is BIGINT base units (1 USDC = 10,000,000). Every move of credits is
-- appended to `journal`; `accounts.balance` and the `holds` states are caches
-- that `verify()` recomputes from it.

-- Credits per account. The row is the only hot row a call touches (the hold
-- debits it); publisher and platform figures are never kept in per-call
-- updated rows, they are aggregated from `earnings`.
CREATE TABLE accounts (
  id          TEXT PRIMARY KEY,
  balance     BIGINT NOT NULL CHECK (balance >= 0),
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Two-phase debits (TigerBeetle's pending transfers): pending -> posted | voided.
CREATE TABLE holds (
  id               UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id       TEXT NOT NULL REFERENCES accounts (id),
  amount           BIGINT NOT NULL CHECK (amount > 0),
  state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'posted', 'voided')),
  call_id          TEXT NOT NULL,
  service          TEXT NOT NULL,
  idempotency_key  TEXT,
  -- Room for the wallet path: 'wallet' holds are recorded by the escrow work.
  paid_with        TEXT NOT NULL DEFAULT 'credit' CHECK (paid_with IN ('credit', 'wallet')),
  posted_amount    BIGINT CHECK (posted_amount > 0 AND posted_amount <= amount),
  void_reason      TEXT,
  expires_at       TIMESTAMPTZ NOT NULL,
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  resolved_at      TIMESTAMPTZ,
  CHECK ((state = 'posted') = (posted_amount IS NOT NULL)),
  CHECK ((state = 'pending') = (resolved_at IS NULL))
);
CREATE INDEX holds_account_created ON holds (account_id, created_at DESC, id);
CREATE INDEX holds_pending_expiry ON holds (expires_at) WHERE state = 'pending';
CREATE INDEX holds_pending_account ON holds (account_id) WHERE state = 'pending';
-- One live (pending or posted) hold per idempotency key; a voided hold gave its
-- money back, so it does not block a new attempt under the same key.
CREATE UNIQUE INDEX holds_idempotency ON holds (account_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL AND state <> 'voided';

-- Append-only journal of every credit move. `delta_balance` changes the
-- account's credits, `delta_held` the amount held by `hold_id`:
--   signup  +a, 0       topup +a, 0
--   hold    -a, +a      void  +a, -a
--   post    (a - gross), -a   (gross leaves the account as a publisher earning)
CREATE TABLE journal (
  id             BIGSERIAL PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES accounts (id),
  kind           TEXT NOT NULL CHECK (kind IN ('signup', 'topup', 'hold', 'post', 'void')),
  amount         BIGINT NOT NULL CHECK (amount > 0),
  delta_balance  BIGINT NOT NULL,
  delta_held     BIGINT NOT NULL,
  hold_id        UUID REFERENCES holds (id),
  reference      TEXT,
  created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
  CHECK ((kind IN ('hold', 'post', 'void')) = (hold_id IS NOT NULL))
);
CREATE INDEX journal_account ON journal (account_id, id);
CREATE INDEX journal_hold ON journal (hold_id) WHERE hold_id IS NOT NULL;
-- The sign-up credit exists at most once per account.
CREATE UNIQUE INDEX journal_signup_once ON journal (account_id) WHERE kind = 'signup';
-- Each hold is placed, posted and voided at most once.
CREATE UNIQUE INDEX journal_hold_once ON journal (hold_id, kind) WHERE hold_id IS NOT NULL;

CREATE FUNCTION farebox_journal_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'journal is append-only: % refused', TG_OP USING ERRCODE = 'FB001';
END;
$$;
CREATE TRIGGER journal_append_only BEFORE UPDATE OR DELETE ON journal
  FOR EACH ROW EXECUTE FUNCTION farebox_journal_immutable();
CREATE TRIGGER journal_no_truncate BEFORE TRUNCATE ON journal
  FOR EACH STATEMENT EXECUTE FUNCTION farebox_journal_immutable();

-- Stripe-style idempotency keys: the first response is stored and replayed.
CREATE TABLE idempotency_keys (
  account_id    TEXT NOT NULL,
  key           TEXT NOT NULL,
  request_hash  TEXT NOT NULL,
  state         TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
  attempt       INTEGER NOT NULL DEFAULT 1,
  -- Stored as text so a replay returns the first response byte for byte.
  response      TEXT,
  locked_until  TIMESTAMPTZ NOT NULL,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  completed_at  TIMESTAMPTZ,
  PRIMARY KEY (account_id, key),
  CHECK ((state = 'completed') = (response IS NOT NULL))
);

-- Settlement: one cycle per publisher owner at a time is open.
CREATE TABLE settlement_cycles (
  id               BIGSERIAL PRIMARY KEY,
  publisher_owner  TEXT NOT NULL,
  state            TEXT NOT NULL DEFAULT 'open' CHECK (state IN
                     ('open', 'closing', 'deployed', 'funded', 'released', 'swept', 'done', 'failed')),
  escrow_id        TEXT,
  error            TEXT,
  data             JSONB NOT NULL DEFAULT '{}'::jsonb,
  version          INTEGER NOT NULL DEFAULT 1,
  opened_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
  closed_at        TIMESTAMPTZ,
  updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX settlement_one_open ON settlement_cycles (publisher_owner) WHERE state = 'open';
CREATE INDEX settlement_owner ON settlement_cycles (publisher_owner, id DESC);
CREATE INDEX settlement_state ON settlement_cycles (state) WHERE state NOT IN ('done', 'failed');

-- Every state move of a cycle, with the on-chain transaction that made it.
CREATE TABLE settlement_steps (
  id            BIGSERIAL PRIMARY KEY,
  cycle_id      BIGINT NOT NULL REFERENCES settlement_cycles (id),
  from_state    TEXT NOT NULL,
  to_state      TEXT NOT NULL,
  tx_hash       TEXT,
  explorer_url  TEXT,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX settlement_steps_cycle ON settlement_steps (cycle_id, id);

-- Funding of a cycle's escrow in batches: prepared (amount fixed, earnings
-- attached) then confirmed with the transaction hash.
CREATE TABLE funding_batches (
  id            BIGSERIAL PRIMARY KEY,
  cycle_id      BIGINT NOT NULL REFERENCES settlement_cycles (id),
  amount        BIGINT NOT NULL CHECK (amount > 0),
  state         TEXT NOT NULL DEFAULT 'prepared' CHECK (state IN ('prepared', 'confirmed')),
  tx_hash       TEXT,
  explorer_url  TEXT,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  confirmed_at  TIMESTAMPTZ,
  CHECK ((state = 'confirmed') = (tx_hash IS NOT NULL))
);
CREATE INDEX funding_batches_cycle ON funding_batches (cycle_id, id);

-- One row per posted call: the publisher's earning, appended, never a
-- per-publisher balance row. `cycle_id` and `funding_batch_id` are set once.
CREATE TABLE earnings (
  id                BIGSERIAL PRIMARY KEY,
  hold_id           UUID NOT NULL UNIQUE REFERENCES holds (id),
  payer_account_id  TEXT NOT NULL REFERENCES accounts (id),
  publisher_owner   TEXT NOT NULL,
  service           TEXT NOT NULL,
  gross             BIGINT NOT NULL CHECK (gross > 0),
  fee               BIGINT NOT NULL CHECK (fee >= 0),
  net               BIGINT NOT NULL CHECK (net >= 0),
  cycle_id          BIGINT REFERENCES settlement_cycles (id),
  funding_batch_id  BIGINT REFERENCES funding_batches (id),
  created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
  CHECK (fee + net = gross),
  CHECK (funding_batch_id IS NULL OR cycle_id IS NOT NULL)
);
CREATE INDEX earnings_owner_created ON earnings (publisher_owner, created_at);
CREATE INDEX earnings_unassigned ON earnings (publisher_owner, id) WHERE cycle_id IS NULL;
CREATE INDEX earnings_cycle ON earnings (cycle_id, id) WHERE cycle_id IS NOT NULL;
CREATE INDEX earnings_service ON earnings (service);

CREATE FUNCTION farebox_earning_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'earnings are append-only: DELETE refused' USING ERRCODE = 'FB001';
  END IF;
  IF NEW.hold_id <> OLD.hold_id OR NEW.payer_account_id <> OLD.payer_account_id
     OR NEW.publisher_owner <> OLD.publisher_owner OR NEW.service <> OLD.service
     OR NEW.gross <> OLD.gross OR NEW.fee <> OLD.fee OR NEW.net <> OLD.net
     OR NEW.created_at <> OLD.created_at
     OR (OLD.cycle_id IS NOT NULL AND NEW.cycle_id IS DISTINCT FROM OLD.cycle_id)
     OR (OLD.funding_batch_id IS NOT NULL AND NEW.funding_batch_id IS DISTINCT FROM OLD.funding_batch_id) THEN
    RAISE EXCEPTION 'earnings: only an unset cycle or funding batch may be assigned' USING ERRCODE = 'FB001';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER earnings_guard BEFORE UPDATE OR DELETE ON earnings
  FOR EACH ROW EXECUTE FUNCTION farebox_earning_guard();
