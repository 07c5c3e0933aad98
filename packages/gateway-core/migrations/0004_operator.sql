-- @farebox/gateway-core, schema version 4: operators, disputes on direct
-- escrows, and the append-only audit log of operator actions.

-- Operators granted with the CLI (`farebox operator grant <email>`), which
-- writes here directly; FAREBOX_OPERATORS (a list of emails) grants more at
-- runtime. The public API never writes this table.
CREATE TABLE gw_operators (
  email_normalized TEXT PRIMARY KEY,
  granted_by       TEXT NOT NULL,
  granted_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Disputes on direct escrows that name the platform treasury as dispute
-- resolver. One row per escrow. Amounts are USDC base units.
CREATE TABLE gw_disputes (
  escrow_id          TEXT PRIMARY KEY,
  state              TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'resolved')),
  -- Who paid the escrow, from its fund events: [{ address, amount }].
  funders            JSONB NOT NULL,
  requested_by       TEXT NOT NULL,
  receiver           TEXT NOT NULL,
  engagement_id      TEXT NOT NULL,
  amount             BIGINT NOT NULL CHECK (amount > 0),
  reason             TEXT NOT NULL DEFAULT '',
  served             BOOLEAN NOT NULL,
  escrow_created_at  TIMESTAMPTZ,
  dispute_tx         TEXT,
  -- The signed resolve transaction and its hash, persisted before it is submitted.
  pending            JSONB,
  distributions      JSONB,
  resolution         TEXT CHECK (resolution IN ('refund', 'split')),
  resolve_tx         TEXT,
  resolved_by        TEXT,
  resolved_at        TIMESTAMPTZ,
  error              TEXT,
  opened_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX gw_disputes_open ON gw_disputes (opened_at) WHERE state = 'open';

-- Every operator action (and every refused attempt): who, what, when.
-- Append-only: a trigger refuses UPDATE, DELETE and TRUNCATE.
CREATE TABLE gw_audit_log (
  id          BIGSERIAL PRIMARY KEY,
  at          TIMESTAMPTZ NOT NULL DEFAULT now(),
  actor       TEXT NOT NULL,
  actor_id    TEXT,
  action      TEXT NOT NULL,
  target      TEXT,
  outcome     TEXT NOT NULL CHECK (outcome IN ('ok', 'denied', 'failed')),
  detail      JSONB NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX gw_audit_log_at ON gw_audit_log (at DESC, id DESC);

CREATE FUNCTION gw_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'gw_audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER gw_audit_log_no_change BEFORE UPDATE OR DELETE ON gw_audit_log
  FOR EACH ROW EXECUTE FUNCTION gw_audit_log_append_only();
CREATE TRIGGER gw_audit_log_no_truncate BEFORE TRUNCATE ON gw_audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION gw_audit_log_append_only();
