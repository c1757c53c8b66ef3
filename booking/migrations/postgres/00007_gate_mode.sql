-- +goose Up
-- The screening's own mode at the gate in front of an existing site: 'auto' (straight through while there is
-- room, the line when full), 'queue_all' (everyone waits) or 'passthrough' (the room is off); NULL takes the
-- server's gate.mode.
ALTER TABLE screenings ADD COLUMN gate_mode TEXT CHECK (gate_mode IN ('auto', 'queue_all', 'passthrough'));

-- +goose Down
ALTER TABLE screenings DROP COLUMN gate_mode;
