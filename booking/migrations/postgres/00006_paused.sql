-- +goose Up
-- When the operator paused the screening's admission (NULL: not paused), so a Redis that forgot the pause
-- gets it back from here before anyone is admitted.
ALTER TABLE screenings ADD COLUMN paused_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE screenings DROP COLUMN paused_at;
