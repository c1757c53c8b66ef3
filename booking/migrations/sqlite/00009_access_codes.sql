-- +goose Up
-- Access codes: codes_required says whether a socket needs a code to take a place; shared_code is one code
-- everyone may use (NULL: none), normalized.
ALTER TABLE screenings ADD COLUMN codes_required BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE screenings ADD COLUMN shared_code TEXT;

-- The one-time codes: 12 Crockford base32 characters, no dashes; used_by is the token that took a place.
CREATE TABLE access_codes (
    screening_id TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    code         TEXT NOT NULL,
    created_at   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    used_by      TEXT,
    used_at      DATETIME,
    revoked_at   DATETIME,
    PRIMARY KEY (screening_id, code)
);

-- +goose Down
DROP TABLE access_codes;
ALTER TABLE screenings DROP COLUMN shared_code;
ALTER TABLE screenings DROP COLUMN codes_required;
