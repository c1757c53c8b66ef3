-- +goose Up
-- When the operator archived the screening (NULL: not archived).
ALTER TABLE screenings ADD COLUMN archived_at DATETIME;

-- +goose Down
ALTER TABLE screenings DROP COLUMN archived_at;
