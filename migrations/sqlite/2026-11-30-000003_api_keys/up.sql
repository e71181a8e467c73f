-- API keys: a merchant holds several (rotation), each live or test, each revocable.
-- Stored only as SHA-256 hashes. `demo` marks the demo merchant's key, accepted only
-- by an instance running --demo. merchants.api_key_hash is kept, unused: it holds the
-- hash of the key a merchant was created with (authentication reads api_keys; SQLite
-- cannot drop a UNIQUE column).
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    key_hash     TEXT NOT NULL UNIQUE,
    mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    demo         BOOLEAN NOT NULL DEFAULT FALSE,
    prefix       TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP
);
CREATE INDEX api_keys_by_merchant ON api_keys (merchant_id, id);

INSERT INTO api_keys (id, merchant_id, key_hash, mode, demo, prefix, created_at)
SELECT 'key_' || lower(hex(randomblob(16))), id, api_key_hash,
       CASE WHEN id = 'mer_demo' THEN 'test' ELSE 'live' END,
       id = 'mer_demo',
       CASE WHEN id = 'mer_demo' THEN 'sk_test_demo' ELSE 'sk_live_' END,
       created_at
FROM merchants;
