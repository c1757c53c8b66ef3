-- +goose Up
-- The admission log (docs/admission-log.md; package fairness): each screening's records in log order, the
-- stored hashes of its Merkle tree (tlog's indexes), and its head: how many records, the last Redis stream
-- id stored, the latest signed checkpoint. Append-only: nothing updates or deletes a record.
CREATE TABLE admission_log (
    screening TEXT NOT NULL,
    idx INTEGER NOT NULL,
    record TEXT NOT NULL,
    seq INTEGER, -- the place a `place` record gives, to find its proof
    PRIMARY KEY (screening, idx)
);
CREATE INDEX admission_log_seq ON admission_log (screening, seq) WHERE seq IS NOT NULL;
CREATE TABLE admission_log_hashes (
    screening TEXT NOT NULL,
    id INTEGER NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (screening, id)
);
CREATE TABLE admission_log_heads (
    screening TEXT PRIMARY KEY,
    size INTEGER NOT NULL DEFAULT 0,
    stream_id TEXT NOT NULL DEFAULT '',
    checkpoint TEXT NOT NULL DEFAULT '',
    checkpoint_size INTEGER NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE admission_log_heads;
DROP TABLE admission_log_hashes;
DROP TABLE admission_log;
