-- @farebox/gateway-core, schema version 6: the connection (the user's grant to
-- a client) is the source of truth for what its tokens may do. A token's
-- `scopes` is now only what the client itself narrowed the token to (a
-- refresh with `scope`); NULL means "whatever the connection grants". The
-- scopes a token carries are computed on every use as the connection's scopes
-- (intersected with the token's own when set), so narrowing, widening or
-- disconnecting the connection applies to every token of it at once.
ALTER TABLE gw_oauth_tokens ALTER COLUMN scopes DROP NOT NULL;
-- Tokens that carried exactly their connection's scopes follow the connection
-- from now on; the others (narrowed by their client, or issued before a
-- narrowing) keep their set, which the connection's scopes still cut down.
UPDATE gw_oauth_tokens t SET scopes = NULL
  FROM gw_oauth_connections c
 WHERE c.id = t.connection_id AND t.scopes = c.scopes;
