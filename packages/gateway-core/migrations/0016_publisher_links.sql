-- @farebox/gateway-core, schema version 16: owner keys linked to publisher accounts
-- (docs/api.md, "Publisher links"). A service registered with its own key (a
-- provider-SDK service's .farebox/keypair) earns under that key; once the key
-- signed a link challenge of an account, that account's publisher views
-- (overview, settlements, analytics, settle-now) cover the key's services too.
-- One account per key: a key linked again (signed again) moves to the new account.
CREATE TABLE gw_publisher_links (
  owner      TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES gw_users (id),
  linked_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX gw_publisher_links_user ON gw_publisher_links (user_id);
