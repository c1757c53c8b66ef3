-- +goose Up
-- A webhook given up after its last attempt is marked failed: it is no longer due, and the operator lists
-- it (GET /api/admin/webhooks?state=failed).
ALTER TABLE webhook_outbox ADD COLUMN failed_at TIMESTAMPTZ;
DROP INDEX webhook_outbox_due;
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;

-- +goose Down
DROP INDEX webhook_outbox_due;
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE delivered_at IS NULL;
ALTER TABLE webhook_outbox DROP COLUMN failed_at;
