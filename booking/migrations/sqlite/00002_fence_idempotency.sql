-- +goose Up
-- SQLite has no sequences: one row per counter, advanced with UPDATE … RETURNING.
CREATE TABLE sequences (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO sequences (name, value) VALUES ('seat_fence', 0);
ALTER TABLE seats ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;
ALTER TABLE reservation_seats ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;
ALTER TABLE reservations ADD COLUMN idempotency_key TEXT;
ALTER TABLE reservations ADD COLUMN request_hash TEXT;

-- +goose Down
ALTER TABLE reservations DROP COLUMN request_hash;
ALTER TABLE reservations DROP COLUMN idempotency_key;
ALTER TABLE reservation_seats DROP COLUMN fence;
ALTER TABLE seats DROP COLUMN fence;
DROP TABLE sequences;
