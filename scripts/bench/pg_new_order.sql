-- Load A's statements, as the server issues them for one new-key order (captured with
-- log_statement = 'all'). Run by scripts/bench.sh with pgbench -M prepared.
\set n random(1, 1000000000000)
SELECT id, fingerprint, status, recovery_point, lock_token, locked_until, attempts, response_status, response_body, response_content_type, response_location, resource_id, expires_at, CAST(clock_timestamp() AT TIME ZONE 'UTC' AS timestamp) FROM idempotency_records WHERE merchant_id = 'mer_demo' AND idempotency_key = 'pgb-' || :n LIMIT 1;
BEGIN;
SELECT CAST(clock_timestamp() AT TIME ZONE 'UTC' AS timestamp);
INSERT INTO idempotency_records (id, merchant_id, idempotency_key, method, path, fingerprint, status, recovery_point, lock_token, locked_until, attempts, created_at, updated_at) VALUES ('ikey_pgb_' || :n, 'mer_demo', 'pgb-' || :n, 'POST', '/orders', '2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881', 'processing', 'started', '0f8fad5bd9cb469fa16570867728950e', now() + interval '30 seconds', 1, now(), now()) ON CONFLICT (merchant_id, idempotency_key) DO NOTHING;
COMMIT;
BEGIN;
SELECT CAST(clock_timestamp() AT TIME ZONE 'UTC' AS timestamp);
INSERT INTO orders (id, merchant_id, amount, currency, status, amount_paid, amount_refunded, description, metadata, created_at, updated_at) VALUES ('ord_pgb_' || :n, 'mer_demo', 1999, 'EUR', 'awaiting_payment', 0, 0, DEFAULT, '{"cart":"c_1"}', now(), now());
SELECT CAST(clock_timestamp() AT TIME ZONE 'UTC' AS timestamp);
UPDATE idempotency_records SET status = 'succeeded', response_status = 201, response_body = '\x7b7d'::bytea, response_content_type = 'application/json', response_location = '/orders/ord_pgb_' || :n, resource_id = 'ord_pgb_' || :n, expires_at = now() + interval '1 day', updated_at = now() WHERE id = 'ikey_pgb_' || :n AND lock_token = '0f8fad5bd9cb469fa16570867728950e' AND status = 'processing';
COMMIT;
