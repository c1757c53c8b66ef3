-- +goose Up
-- Whether the screening keeps its line as a waitlist when it sells out (NULL: the server's
-- booking.waitlist), set at creation or by the operator (docs/protocol.md 5.4).
ALTER TABLE screenings ADD COLUMN waitlist BOOLEAN;

-- +goose Down
ALTER TABLE screenings DROP COLUMN waitlist;
