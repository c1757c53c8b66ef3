-- +goose Up
-- A webhook given up after its last attempt is marked failed (see the PostgreSQL migration of the same number).
ALTER TABLE webhook_outbox ADD COLUMN failed_at DATETIME;
DROP INDEX webhook_outbox_due;
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;

-- +goose Down
DROP INDEX webhook_outbox_due;
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE delivered_at IS NULL;
ALTER TABLE webhook_outbox DROP COLUMN failed_at;
