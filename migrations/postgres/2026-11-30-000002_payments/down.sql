DROP TABLE simulator_operations;
DROP TABLE refunds;
DROP TABLE payments;
