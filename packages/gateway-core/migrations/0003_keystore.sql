-- Encrypted wallet secrets (AES-256-GCM; the key never reaches the database),
-- shared by every gateway on this database. Rows are never updated or deleted.
CREATE TABLE gw_keystore (
  ref         TEXT PRIMARY KEY,
  address     TEXT NOT NULL UNIQUE,
  iv          TEXT NOT NULL,
  ciphertext  TEXT NOT NULL,
  tag         TEXT NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
