-- Load A's statements, as the server issues them for one new-key order (captured with
-- log_statement = 'all'): the order and its finished idempotency record, in one
-- transaction. Run by scripts/bench.sh with pgbench -M prepared (the server's
-- statements are prepared too).
\set n random(1, 1000000000000)
BEGIN;
INSERT INTO orders (id, merchant_id, amount, currency, status, amount_paid, amount_refunded, description, metadata, created_at, updated_at) VALUES ('ord_pgb_' || :n::text, 'mer_demo', 1999, 'EUR', 'awaiting_payment', 0, 0, NULL, '{"cart":"c_1"}', (CAST(statement_timestamp() AT TIME ZONE 'UTC' AS timestamp) + 0 * interval '1 microsecond'), (CAST(statement_timestamp() AT TIME ZONE 'UTC' AS timestamp) + 0 * interval '1 microsecond')) RETURNING created_at;
INSERT INTO idempotency_records (id, merchant_id, idempotency_key, method, path, fingerprint, status, recovery_point, lock_token, locked_until, attempts, response_status, response_body, response_content_type, response_location, resource_id, created_at, updated_at, expires_at) VALUES ('ikey_pgb_' || :n::text, 'mer_demo', 'pgb-' || :n::text, 'POST', '/orders', '631f2da6042d524d05988a5bfe38338ad44a827579417e0650eb0526f1b2854e', 'succeeded', 'started', '0e577f0cd7a74380a42d79f67c0b4139', now(), 1, 201, convert_to('{"id":"ord_01a22d33d45c7523a432b6e9f4698c39","object":"order","amount":1999,"currency":"EUR","status":"awaiting_payment","amount_paid":0,"amount_refunded":0,"description": null,"metadata":{"cart":"c_1"},"created_at":"2026-11-30T16:05:01.149413","updated_at":"2026-11-30T16:05:01.149413"}', 'UTF8'), 'application/json', '/orders/ord_pgb_' || :n::text, 'ord_pgb_' || :n::text, now(), now(), now() + interval '1 day') ON CONFLICT (merchant_id, idempotency_key) DO NOTHING;
COMMIT;
