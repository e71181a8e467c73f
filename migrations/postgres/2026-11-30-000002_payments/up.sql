-- Payments, refunds, and the simulated processor's ledger.
CREATE TABLE payments (
    id               TEXT COLLATE "C" PRIMARY KEY,
    merchant_id      TEXT NOT NULL REFERENCES merchants (id),
    order_id         TEXT NOT NULL REFERENCES orders (id),
    amount           BIGINT NOT NULL CHECK (amount > 0),
    currency         TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('processing', 'succeeded', 'failed')),
    payment_method   TEXT NOT NULL,
    failure_code     TEXT,
    failure_message  TEXT,
    amount_refunded  BIGINT NOT NULL DEFAULT 0,
    amount_reserved  BIGINT NOT NULL DEFAULT 0,   -- held by refunds in flight
    processor_key    TEXT NOT NULL UNIQUE,
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    CHECK (amount_refunded >= 0 AND amount_reserved >= 0
           AND amount_refunded + amount_reserved <= amount)
);
-- An order has at most one payment in flight or succeeded: paid at most once.
CREATE UNIQUE INDEX payments_one_live_per_order ON payments (order_id)
    WHERE status IN ('processing', 'succeeded');
CREATE INDEX payments_by_merchant ON payments (merchant_id, id);
CREATE INDEX payments_by_order ON payments (order_id, id);

CREATE TABLE refunds (
    id              TEXT COLLATE "C" PRIMARY KEY,
    merchant_id     TEXT NOT NULL REFERENCES merchants (id),
    payment_id      TEXT NOT NULL REFERENCES payments (id),
    amount          BIGINT NOT NULL CHECK (amount > 0),
    currency        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('processing', 'succeeded', 'failed')),
    reason          TEXT,
    failure_code    TEXT,
    processor_key   TEXT NOT NULL UNIQUE,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE INDEX refunds_by_payment ON refunds (payment_id, id);

-- The simulator's own ledger: one row per processor idempotency key, so a repeated
-- call returns the first result and money moves at most once, from any instance.
CREATE TABLE simulator_operations (
    processor_key   TEXT PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('charge', 'refund')),
    amount          BIGINT NOT NULL,
    currency        TEXT NOT NULL,
    payment_method  TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('succeeded', 'declined', 'unavailable')),
    decline_code    TEXT,
    calls           INTEGER NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
