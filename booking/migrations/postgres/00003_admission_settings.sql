-- +goose Up
-- Each screening's own admission settings, changed live by the operator (NULL: the server's default), and
-- when the operator closed its sale.
ALTER TABLE screenings ADD COLUMN interval_ms BIGINT CHECK (interval_ms > 0);
ALTER TABLE screenings ADD COLUMN batch_size INTEGER CHECK (batch_size > 0);
ALTER TABLE screenings ADD COLUMN max_active INTEGER CHECK (max_active > 0);
ALTER TABLE screenings ADD COLUMN active_ttl_ms BIGINT CHECK (active_ttl_ms > 0);
ALTER TABLE screenings ADD COLUMN closed_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE screenings DROP COLUMN closed_at;
ALTER TABLE screenings DROP COLUMN active_ttl_ms;
ALTER TABLE screenings DROP COLUMN max_active;
ALTER TABLE screenings DROP COLUMN batch_size;
ALTER TABLE screenings DROP COLUMN interval_ms;
