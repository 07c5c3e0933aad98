-- @farebox/ledger, schema version 6: a cycle's totals kept on its row.
-- A cycle's calls, gross, fee and net were summed over its earnings on every
-- read, and the settler reads a cycle several times a tick: 9-12 ms with
-- 10,000 earnings, 90-120 ms with 110,000 and 300-400 ms with 510,000
-- (PostgreSQL 15, this project's machines), a cost that grew with the
-- cycle (an hour of calls by default). The claim that assigns earnings to a
-- cycle now adds their sums to the cycle's row in the same statement;
-- `verify()` checks every cycle's totals against its earnings.
ALTER TABLE settlement_cycles
  ADD COLUMN claimed_calls BIGINT NOT NULL DEFAULT 0 CHECK (claimed_calls >= 0),
  ADD COLUMN claimed_gross BIGINT NOT NULL DEFAULT 0 CHECK (claimed_gross >= 0),
  ADD COLUMN claimed_fee BIGINT NOT NULL DEFAULT 0 CHECK (claimed_fee >= 0),
  ADD COLUMN claimed_net BIGINT NOT NULL DEFAULT 0 CHECK (claimed_net >= 0);
UPDATE settlement_cycles c
   SET claimed_calls = t.calls, claimed_gross = t.gross, claimed_fee = t.fee, claimed_net = t.net
  FROM (SELECT cycle_id, count(*) AS calls, sum(gross) AS gross, sum(fee) AS fee, sum(net) AS net
          FROM earnings WHERE cycle_id IS NOT NULL GROUP BY cycle_id) t
 WHERE c.id = t.cycle_id;
