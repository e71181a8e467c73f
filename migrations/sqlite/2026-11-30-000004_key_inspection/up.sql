-- Key inspection lists a merchant's records newest first (GET /idempotency_keys).
CREATE INDEX idempotency_records_by_merchant ON idempotency_records (merchant_id, id);
