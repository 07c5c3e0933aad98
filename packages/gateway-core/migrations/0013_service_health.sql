-- @farebox/gateway-core, schema version 13: the health of each service, as the
-- gateway sees its paid calls (docs/api.md, "Service health"). One row per
-- service and 5-minute bucket (epoch seconds / 300): the calls that reached the
-- service (the owner's own calls and calls refused before the service are not
-- counted), those it answered (the others failed, timed out or were refunded),
-- a histogram of its answer time (counts per bucket of HEALTH_LATENCY_BOUNDS_MS,
-- gateway-core/src/health/), and the last failure. Every gateway adds its
-- counts to the same rows (one upsert per flush, off the call path); rows
-- older than 8 days are pruned.
CREATE TABLE gw_service_health (
  service       TEXT    NOT NULL,
  bucket        BIGINT  NOT NULL,
  calls         INTEGER NOT NULL DEFAULT 0,
  ok            INTEGER NOT NULL DEFAULT 0,
  latency       INTEGER[] NOT NULL,
  last_failure  TEXT,
  last_failure_ms BIGINT,
  PRIMARY KEY (service, bucket)
);
CREATE INDEX gw_service_health_bucket ON gw_service_health (bucket);
