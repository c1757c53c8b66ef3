-- +goose Up
-- Fencing numbers: every holder of a seat lock takes the next one inside its transaction, and the seat row
-- keeps the highest that wrote it, so a holder whose lease ran out can never write over a newer holder.
CREATE SEQUENCE seat_fence;
ALTER TABLE seats ADD COLUMN fence BIGINT NOT NULL DEFAULT 0;
ALTER TABLE reservation_seats ADD COLUMN fence BIGINT NOT NULL DEFAULT 0;
-- Idempotency-Key of the request that made the reservation, and the hash of its body, so a retry gets the
-- same answer and another body under the same key is refused.
ALTER TABLE reservations ADD COLUMN idempotency_key TEXT;
ALTER TABLE reservations ADD COLUMN request_hash TEXT;

-- +goose Down
ALTER TABLE reservations DROP COLUMN request_hash;
ALTER TABLE reservations DROP COLUMN idempotency_key;
ALTER TABLE reservation_seats DROP COLUMN fence;
ALTER TABLE seats DROP COLUMN fence;
DROP SEQUENCE seat_fence;
