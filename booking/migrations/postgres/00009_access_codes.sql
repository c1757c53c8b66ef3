-- +goose Up
-- Access codes: a screening may let a socket take a place only with a code. codes_required says whether it
-- does; shared_code is one code everyone may use (NULL: none), stored normalized (upper case, no dashes).
ALTER TABLE screenings ADD COLUMN codes_required BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE screenings ADD COLUMN shared_code TEXT;

-- The one-time codes the operator issued: 12 Crockford base32 characters, without dashes. A code lets in
-- the one token that used it (used_by), again and again; a revoked code lets in nobody and stays listed.
CREATE TABLE access_codes (
    screening_id TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    code         TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    used_by      TEXT,
    used_at      TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ,
    PRIMARY KEY (screening_id, code)
);

-- +goose Down
DROP TABLE access_codes;
ALTER TABLE screenings DROP COLUMN shared_code;
ALTER TABLE screenings DROP COLUMN codes_required;
