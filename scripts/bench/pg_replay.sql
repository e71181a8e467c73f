-- Load B's statement on a replay-cache miss (a replay served by the cache issues none):
-- the lookup of a finished key, one indexed read with the database clock in the same
-- statement. Run by scripts/bench.sh with pgbench -M prepared.
SELECT id, fingerprint, status, recovery_point, lock_token, locked_until, attempts, response_status, response_body, response_content_type, response_location, resource_id, expires_at, CAST(clock_timestamp() AT TIME ZONE 'UTC' AS timestamp) FROM idempotency_records WHERE merchant_id = 'mer_demo' AND idempotency_key = 'bench-replay' LIMIT 1;
