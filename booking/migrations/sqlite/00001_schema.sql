-- +goose Up
CREATE TABLE screenings (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    starts_at     DATETIME NOT NULL,
    sale_opens_at DATETIME NOT NULL,
    created_at    DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE seats (
    screening_id TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    seat_id      TEXT NOT NULL,
    row_label    TEXT NOT NULL,
    number       INTEGER NOT NULL,
    PRIMARY KEY (screening_id, seat_id)
);

CREATE TABLE reservations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    screening_id TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    holder       TEXT NOT NULL,
    pass_id      TEXT NOT NULL,
    created_at   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT reservations_pass_once UNIQUE (pass_id)
);

CREATE TABLE reservation_seats (
    reservation_id INTEGER NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    screening_id   TEXT NOT NULL,
    seat_id        TEXT NOT NULL,
    FOREIGN KEY (screening_id, seat_id) REFERENCES seats (screening_id, seat_id),
    CONSTRAINT reservation_seats_once UNIQUE (screening_id, seat_id)
);

-- +goose Down
DROP TABLE reservation_seats;
DROP TABLE reservations;
DROP TABLE seats;
DROP TABLE screenings;
