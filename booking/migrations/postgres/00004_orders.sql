-- +goose Up
-- The box office. A reservation is an order: held (its seats kept until hold_expires_at while the buyer
-- pays), confirmed, cancelled or expired. A screening sells in 'instant' mode (an order is confirmed as it
-- is made, as before) or 'hold' mode; NULL takes the server's booking.checkout.
ALTER TABLE screenings ADD COLUMN checkout TEXT CHECK (checkout IN ('instant', 'hold'));

ALTER TABLE reservations ADD COLUMN code TEXT;
ALTER TABLE reservations ADD COLUMN status TEXT NOT NULL DEFAULT 'confirmed'
    CHECK (status IN ('held', 'confirmed', 'cancelled', 'expired'));
ALTER TABLE reservations ADD COLUMN hold_expires_at TIMESTAMPTZ;
ALTER TABLE reservations ADD COLUMN confirmed_at TIMESTAMPTZ;
-- When a cancelled or expired order ended, and who cancelled it ('buyer' or 'admin').
ALTER TABLE reservations ADD COLUMN ended_at TIMESTAMPTZ;
ALTER TABLE reservations ADD COLUMN cancelled_by TEXT;
-- The orders sold before this migration: confirmed when made, each with a code of 122 random bits.
UPDATE reservations SET code = replace(gen_random_uuid()::text, '-', ''), confirmed_at = created_at;
ALTER TABLE reservations ALTER COLUMN code SET NOT NULL;
CREATE UNIQUE INDEX reservations_code ON reservations (code);
CREATE INDEX reservations_by_status ON reservations (screening_id, status, id);
-- What the sweeper reads: the holds, by when they lapse.
CREATE INDEX reservations_holds ON reservations (hold_expires_at) WHERE status = 'held';

-- A seat is in at most one live (held or confirmed) order: its row stays with a cancelled or expired order,
-- no longer live, and the seat can be sold again.
ALTER TABLE reservation_seats ADD COLUMN live BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE reservation_seats DROP CONSTRAINT reservation_seats_once;
CREATE UNIQUE INDEX reservation_seats_once ON reservation_seats (screening_id, seat_id) WHERE live;
CREATE INDEX reservation_seats_of ON reservation_seats (reservation_id);

-- The webhooks' outbox: every order transition (and a screening's sold_out and reopened) is written here in
-- the transaction that makes it, and delivered from here, at least once, under its msg_id.
CREATE TABLE webhook_outbox (
    id              BIGSERIAL PRIMARY KEY,
    msg_id          TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at    TIMESTAMPTZ,
    last_status     INTEGER,
    last_error      TEXT
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE delivered_at IS NULL;

-- +goose Down
DROP TABLE webhook_outbox;
DROP INDEX reservation_seats_of;
DROP INDEX reservation_seats_once;
DELETE FROM reservation_seats WHERE NOT live;
ALTER TABLE reservation_seats ADD CONSTRAINT reservation_seats_once UNIQUE (screening_id, seat_id);
ALTER TABLE reservation_seats DROP COLUMN live;
DROP INDEX reservations_holds;
DROP INDEX reservations_by_status;
DROP INDEX reservations_code;
ALTER TABLE reservations DROP COLUMN cancelled_by;
ALTER TABLE reservations DROP COLUMN ended_at;
ALTER TABLE reservations DROP COLUMN confirmed_at;
ALTER TABLE reservations DROP COLUMN hold_expires_at;
ALTER TABLE reservations DROP COLUMN status;
ALTER TABLE reservations DROP COLUMN code;
ALTER TABLE screenings DROP COLUMN checkout;
