-- +goose Up
CREATE TABLE screenings (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    starts_at     TIMESTAMPTZ NOT NULL,
    sale_opens_at TIMESTAMPTZ NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE seats (
    screening_id TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    seat_id      TEXT NOT NULL,
    row_label    TEXT NOT NULL,
    number       INTEGER NOT NULL,
    PRIMARY KEY (screening_id, seat_id)
);

CREATE TABLE reservations (
    id           BIGSERIAL PRIMARY KEY,
    screening_id TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    holder       TEXT NOT NULL,
    pass_id      TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- One reservation per pass, even if two requests with it race past the Redis checks.
    CONSTRAINT reservations_pass_once UNIQUE (pass_id)
);

CREATE TABLE reservation_seats (
    reservation_id BIGINT NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    screening_id   TEXT NOT NULL,
    seat_id        TEXT NOT NULL,
    FOREIGN KEY (screening_id, seat_id) REFERENCES seats (screening_id, seat_id),
    -- The final guard: a seat of a screening is sold at most once, whatever happened to the Redis locks.
    CONSTRAINT reservation_seats_once UNIQUE (screening_id, seat_id)
);

-- +goose Down
DROP TABLE reservation_seats;
DROP TABLE reservations;
DROP TABLE seats;
DROP TABLE screenings;
