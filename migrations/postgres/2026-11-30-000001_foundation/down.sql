DROP TABLE orders;
DROP TABLE idempotency_records;
DROP TABLE merchants;
