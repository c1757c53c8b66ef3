-- +goose Up
-- When the operator archived the screening (NULL: not archived). An archived screening is off the public
-- list and its sale is closed; the operator's list and the orders' exports keep it.
ALTER TABLE screenings ADD COLUMN archived_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE screenings DROP COLUMN archived_at;
