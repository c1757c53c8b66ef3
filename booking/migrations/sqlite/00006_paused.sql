-- +goose Up
-- When the operator paused the screening's admission (NULL: not paused).
ALTER TABLE screenings ADD COLUMN paused_at DATETIME;

-- +goose Down
ALTER TABLE screenings DROP COLUMN paused_at;
