-- +goose Up
-- The screening's own mode at the gate: 'auto', 'queue_all' or 'passthrough'; NULL takes gate.mode.
ALTER TABLE screenings ADD COLUMN gate_mode TEXT CHECK (gate_mode IN ('auto', 'queue_all', 'passthrough'));

-- +goose Down
ALTER TABLE screenings DROP COLUMN gate_mode;
