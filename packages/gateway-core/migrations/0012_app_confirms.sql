-- @farebox/gateway-core, schema version 12: who confirms a connection's paid calls
-- (docs/oauth.md, "Calls the user confirms"). By default the person does, on
-- the gateway's own page (/approve/<id>, reached through MCP URL-mode
-- elicitation or the link in the refusal). `app_confirms`: the owner chose on
-- the consent page that the app may confirm for them (MCP form-mode
-- elicitation, answered by the client).
ALTER TABLE gw_oauth_call_confirmations ADD COLUMN app_confirms BOOLEAN NOT NULL DEFAULT false;
