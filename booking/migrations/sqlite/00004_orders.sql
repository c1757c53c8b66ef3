-- +goose Up
-- The box office (see the PostgreSQL migration of the same number for what each column means).
ALTER TABLE screenings ADD COLUMN checkout TEXT CHECK (checkout IN ('instant', 'hold'));

ALTER TABLE reservations ADD COLUMN code TEXT;
ALTER TABLE reservations ADD COLUMN status TEXT NOT NULL DEFAULT 'confirmed'
    CHECK (status IN ('held', 'confirmed', 'cancelled', 'expired'));
ALTER TABLE reservations ADD COLUMN hold_expires_at DATETIME;
ALTER TABLE reservations ADD COLUMN confirmed_at DATETIME;
ALTER TABLE reservations ADD COLUMN ended_at DATETIME;
ALTER TABLE reservations ADD COLUMN cancelled_by TEXT;
UPDATE reservations SET code = lower(hex(randomblob(16))), confirmed_at = created_at;
CREATE UNIQUE INDEX reservations_code ON reservations (code);
CREATE INDEX reservations_by_status ON reservations (screening_id, status, id);
CREATE INDEX reservations_holds ON reservations (hold_expires_at) WHERE status = 'held';

-- SQLite cannot drop a table's UNIQUE constraint: the table is made again with a partial unique index.
CREATE TABLE reservation_seats_new (
    reservation_id INTEGER NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    screening_id   TEXT NOT NULL,
    seat_id        TEXT NOT NULL,
    fence          INTEGER NOT NULL DEFAULT 0,
    live           BOOLEAN NOT NULL DEFAULT TRUE,
    FOREIGN KEY (screening_id, seat_id) REFERENCES seats (screening_id, seat_id)
);
INSERT INTO reservation_seats_new (reservation_id, screening_id, seat_id, fence)
    SELECT reservation_id, screening_id, seat_id, fence FROM reservation_seats;
DROP TABLE reservation_seats;
ALTER TABLE reservation_seats_new RENAME TO reservation_seats;
CREATE UNIQUE INDEX reservation_seats_once ON reservation_seats (screening_id, seat_id) WHERE live;
CREATE INDEX reservation_seats_of ON reservation_seats (reservation_id);

CREATE TABLE webhook_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    msg_id          TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    created_at      DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    delivered_at    DATETIME,
    last_status     INTEGER,
    last_error      TEXT
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE delivered_at IS NULL;

-- +goose Down
DROP TABLE webhook_outbox;
CREATE TABLE reservation_seats_old (
    reservation_id INTEGER NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    screening_id   TEXT NOT NULL,
    seat_id        TEXT NOT NULL,
    fence          INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (screening_id, seat_id) REFERENCES seats (screening_id, seat_id),
    CONSTRAINT reservation_seats_once UNIQUE (screening_id, seat_id)
);
INSERT INTO reservation_seats_old (reservation_id, screening_id, seat_id, fence)
    SELECT reservation_id, screening_id, seat_id, fence FROM reservation_seats WHERE live;
DROP TABLE reservation_seats;
ALTER TABLE reservation_seats_old RENAME TO reservation_seats;
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
