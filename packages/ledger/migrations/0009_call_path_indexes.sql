-- @farebox/ledger, schema version 9: no index a call writes that no query reads.
-- A paid call (a hold, then its post) wrote 17 index entries; index
-- insertion was the largest single share of PostgreSQL's CPU under the
-- gateway bench's load (`ExecInsertIndexTuples`, 24% of its samples under
-- `perf`). Two of those indexes served nothing a call needs:
-- - `earnings_service` (service): no query reads earnings by service alone;
--   a publisher's per-service figures go by `publisher_owner` first.
-- - `journal_account` (account_id, id) took the call's two journal rows
--   (hold and post), yet it is read only for an account's credits (its
--   sign-up and top-ups: the transactions list and the top-up replay check).
--   `journal_credits` holds those rows only. An account's calls are listed
--   from `holds_account_created`; its full journal, when verified, is read
--   whole. A call now writes 14 index entries.
-- Building `journal_credits` reads the whole journal while writes to it wait:
-- 194 ms for 2,000,001 rows (443 MB, cached) on this project's machines. On
-- a larger journal it can be built beforehand without blocking (`CREATE INDEX
-- CONCURRENTLY journal_credits ...`, the same definition), and this
-- migration keeps it (docs/deploy.md). A concurrent build that failed leaves
-- an invalid index of that name, which no query can use: it is built again.
DROP INDEX earnings_service;
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE c.relname = 'journal_credits' AND c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid) THEN
    DROP INDEX journal_credits;
  END IF;
END
$$;
CREATE INDEX IF NOT EXISTS journal_credits ON journal (account_id, id) WHERE kind IN ('signup', 'topup');
DROP INDEX journal_account;
