-- @farebox/ledger, schema version 11: a cycle's fee is taken on its total, and its earnings say so.
-- A cycle's escrow pays the platform floor(gross x 5 / 100) of everything
-- it releases, once. The earnings kept the fee of each call, rounded down
-- call by call: 0 for a call under 20 base units, 1 for a call of 21
-- (5 % is 1.05). So the books (a cycle's totals, the publisher's analytics
-- and per-service figures, the platform's revenue) showed less fee and more
-- net than the release paid: 1,000 calls of 19 base units were fee 0 and
-- net 19,000 in the books, 950 and 18,050 on chain.
-- From this version the claim that assigns earnings to a cycle fixes their
-- fee too: an earning's fee is the fee on the cycle's running total up to
-- and including it, less the fee on the total before it (so 5 % of its
-- gross rounded down or up), and the fees of a cycle's earnings add up to
-- floor(cycle gross x 5 %), what its escrow takes. An earning not claimed
-- yet keeps the split it was posted with. The guard lets fee and net change
-- in that claim only (the cycle set where there was none); fee + net = gross
-- is still the table's check, and verify() checks each cycle's fee.
-- Earnings claimed before this version get the same split here (in id
-- order), and their cycles the totals that go with it: one pass over the
-- claimed earnings, rows whose fee does not change are not written.
-- 500 is PLATFORM_FEE_BPS of @farebox/protocol.
DROP TRIGGER earnings_guard ON earnings;
UPDATE earnings e
   SET fee = s.fee, net = e.gross - s.fee
  FROM (
    SELECT id, (div(run * 500, 10000) - div((run - gross) * 500, 10000))::bigint AS fee
      FROM (SELECT id, gross, sum(gross) OVER (PARTITION BY cycle_id ORDER BY id) AS run
              FROM earnings WHERE cycle_id IS NOT NULL) t
  ) s
 WHERE e.id = s.id AND e.fee <> s.fee;
UPDATE settlement_cycles
   SET claimed_fee = div(claimed_gross::numeric * 500, 10000)::bigint,
       claimed_net = claimed_gross - div(claimed_gross::numeric * 500, 10000)::bigint
 WHERE claimed_fee <> div(claimed_gross::numeric * 500, 10000)::bigint;
CREATE TRIGGER earnings_guard BEFORE UPDATE ON earnings
  FOR EACH ROW WHEN (
    NEW.hold_id <> OLD.hold_id OR NEW.payer_account_id <> OLD.payer_account_id
    OR NEW.publisher_owner <> OLD.publisher_owner OR NEW.service <> OLD.service
    OR NEW.gross <> OLD.gross
    OR ((NEW.fee <> OLD.fee OR NEW.net <> OLD.net) AND NOT (OLD.cycle_id IS NULL AND NEW.cycle_id IS NOT NULL))
    OR NEW.created_at <> OLD.created_at
    OR (OLD.cycle_id IS NOT NULL AND NEW.cycle_id IS DISTINCT FROM OLD.cycle_id)
    OR (OLD.funding_batch_id IS NOT NULL AND NEW.funding_batch_id IS DISTINCT FROM OLD.funding_batch_id)
  ) EXECUTE FUNCTION farebox_earning_guard();
