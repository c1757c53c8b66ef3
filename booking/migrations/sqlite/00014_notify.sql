-- +goose Up
-- E-mail to a buyer who left the page (package notify; docs/operations.md, "Notifications by e-mail"): the
-- address a waiting or admitted token left, the one-time links the e-mails carry, and the outbox of e-mails
-- to send. A link is found by the SHA-256 of its nonce, never by the nonce, and the token it opens stays in
-- this database: no e-mail carries it.
CREATE TABLE notify_addresses (
    screening_id TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    token        TEXT NOT NULL,
    email        TEXT NOT NULL,
    lang         TEXT NOT NULL CHECK (lang IN ('en', 'ko')),
    created_at   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (screening_id, token)
);

CREATE TABLE notify_links (
    nonce_hash   TEXT PRIMARY KEY,
    screening_id TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    token        TEXT NOT NULL,
    expires_at   DATETIME NOT NULL,
    used_at      DATETIME
);
CREATE INDEX notify_links_of ON notify_links (screening_id, token);
CREATE INDEX notify_links_expiry ON notify_links (expires_at);

-- One row per e-mail. link_nonce is the link's nonce, kept only until the e-mail is sent or given up (then
-- NULL); dedup_key makes the same notice for the same token one row, whoever writes it twice. An e-mail
-- being sent holds a lease (leased_until), which keeps it from every other deliverer.
CREATE TABLE notify_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    screening_id    TEXT NOT NULL REFERENCES screenings (id) ON DELETE CASCADE,
    dedup_key       TEXT NOT NULL UNIQUE,
    email           TEXT NOT NULL,
    lang            TEXT NOT NULL CHECK (lang IN ('en', 'ko')),
    kind            TEXT NOT NULL CHECK (kind IN ('offer', 'admission')),
    link_nonce_hash TEXT NOT NULL,
    link_nonce      TEXT,
    deadline        DATETIME,
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DATETIME NOT NULL,
    leased_until    DATETIME,
    last_error      TEXT,
    created_at      DATETIME NOT NULL,
    sent_at         DATETIME
);
CREATE INDEX notify_outbox_due ON notify_outbox (next_attempt_at) WHERE state = 'pending';
CREATE INDEX notify_outbox_by_email ON notify_outbox (email, sent_at);
CREATE INDEX notify_outbox_of ON notify_outbox (screening_id, state);

-- +goose Down
DROP TABLE notify_outbox;
DROP TABLE notify_links;
DROP TABLE notify_addresses;
