-- Merchants, idempotency records and orders. Ids sort in byte order (COLLATE "C"),
-- so `id < cursor ORDER BY id DESC` pages by creation time.
CREATE TABLE merchants (
    id            TEXT COLLATE "C" PRIMARY KEY,
    name          TEXT NOT NULL,
    api_key_hash  TEXT NOT NULL UNIQUE,   -- SHA-256 hex of the API key; never the key
    created_at    TIMESTAMP NOT NULL
);

CREATE TABLE idempotency_records (
    id                     TEXT COLLATE "C" PRIMARY KEY,
    merchant_id            TEXT NOT NULL REFERENCES merchants (id),
    idempotency_key        TEXT NOT NULL,
    method                 TEXT NOT NULL,
    path                   TEXT NOT NULL,
    fingerprint            TEXT NOT NULL,
    status                 TEXT NOT NULL
        CHECK (status IN ('processing', 'succeeded', 'failed', 'failed_retryable')),
    recovery_point         TEXT NOT NULL,
    lock_token             TEXT NOT NULL,
    locked_until           TIMESTAMP NOT NULL,
    attempts               INTEGER NOT NULL,
    response_status        INTEGER,
    response_body          BYTEA,
    response_content_type  TEXT,
    response_location      TEXT,
    resource_id            TEXT,
    created_at             TIMESTAMP NOT NULL,
    updated_at             TIMESTAMP NOT NULL,
    expires_at             TIMESTAMP,
    CONSTRAINT idempotency_records_scope UNIQUE (merchant_id, idempotency_key)
);
CREATE INDEX idempotency_records_lease ON idempotency_records (locked_until)
    WHERE status = 'processing';
CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at)
    WHERE status <> 'processing';

CREATE TABLE orders (
    id               TEXT COLLATE "C" PRIMARY KEY,
    merchant_id      TEXT NOT NULL REFERENCES merchants (id),
    amount           BIGINT NOT NULL CHECK (amount > 0),
    currency         TEXT NOT NULL,
    status           TEXT NOT NULL,
    amount_paid      BIGINT NOT NULL DEFAULT 0,
    amount_refunded  BIGINT NOT NULL DEFAULT 0,
    description      TEXT,
    metadata         TEXT NOT NULL,       -- a JSON object of string → string
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL
);
CREATE INDEX orders_by_merchant ON orders (merchant_id, id);
