-- @farebox/gateway-core, schema version 15: each service's last health status
-- (docs/api.md, "Service health"; docs/webhooks.md, `service.health_changed`).
-- A gateway that sees a service's status change updates this row and writes the
-- webhook event in the same transaction; the update only happens when the
-- stored status differs, so of several gateways seeing the same change one
-- writes the event, once.
CREATE TABLE gw_service_status (
  service    TEXT PRIMARY KEY,
  status     TEXT NOT NULL CHECK (status IN ('ok', 'degraded', 'failing', 'new')),
  changed_ms BIGINT NOT NULL
);
