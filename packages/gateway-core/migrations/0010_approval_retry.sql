-- @farebox/gateway-core, schema version 10: an approved call that failed and was refunded may be retried once
-- (docs/oauth.md, "Calls the user confirms"). The approval goes back to
-- `approved` (a `link` approval, named by the retry's approval_id) and this
-- records when, so that a second refund does not give it back again.
ALTER TABLE gw_call_approvals ADD COLUMN reopened_ms BIGINT;
