-- @farebox/ledger, schema version 4: references checked by construction, not per row.
-- The foreign keys of the per-call rows cost about 40% of a hold's and of a
-- post's execution on PostgreSQL (EXPLAIN ANALYZE: 0.17 of 0.41 ms and 0.25
-- of 0.59 ms; one lookup and row lock per reference per row). Every row of
-- holds, journal and earnings is written by one of the ledger's statements
-- from the row it references, read or updated in the same statement or
-- transaction (a hold from its account's debit, a journal or earning row from
-- its hold's update, a top-up's row after its account's row is locked), so
-- none can name a missing row; accounts and holds are never deleted (refused
-- below), so no reference can dangle later; `verify()` checks every one.
ALTER TABLE holds DROP CONSTRAINT holds_account_id_fkey;
ALTER TABLE journal DROP CONSTRAINT journal_account_id_fkey, DROP CONSTRAINT journal_hold_id_fkey;
ALTER TABLE earnings DROP CONSTRAINT earnings_hold_id_fkey, DROP CONSTRAINT earnings_payer_account_id_fkey;
-- journal_hold_once (hold_id, kind) serves every lookup by hold.
DROP INDEX journal_hold;

CREATE FUNCTION farebox_referenced_rows_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% rows are referenced by the journal: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'FB002';
END;
$$;
CREATE TRIGGER accounts_kept BEFORE DELETE OR TRUNCATE ON accounts
  FOR EACH STATEMENT EXECUTE FUNCTION farebox_referenced_rows_kept();
CREATE TRIGGER holds_kept BEFORE DELETE OR TRUNCATE ON holds
  FOR EACH STATEMENT EXECUTE FUNCTION farebox_referenced_rows_kept();
-- The key columns never change either.
CREATE FUNCTION farebox_keys_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%.id never changes: UPDATE refused', TG_TABLE_NAME USING ERRCODE = 'FB002';
END;
$$;
CREATE TRIGGER accounts_id_fixed BEFORE UPDATE OF id ON accounts
  FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION farebox_keys_fixed();
CREATE TRIGGER holds_key_fixed BEFORE UPDATE OF id, account_id ON holds
  FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.account_id IS DISTINCT FROM NEW.account_id) EXECUTE FUNCTION farebox_keys_fixed();
