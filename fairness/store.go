// The admission log in the database: its records in order, tlog's stored hashes of its tree, and per
// screening the head (how many records, the last stream id stored, the latest signed checkpoint). Append
// writes a batch in one transaction that first locks the head, so two writers never interleave.

package fairness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/mod/sumdb/tlog"
)

// head is a screening's row of admission_log_heads.
type head struct {
	Size           int64  `db:"size"`
	StreamID       string `db:"stream_id"`
	Checkpoint     string `db:"checkpoint"`
	CheckpointSize int64  `db:"checkpoint_size"`
	// CheckpointAtMs is when the checkpoint was kept, Unix milliseconds (0: before that was recorded).
	CheckpointAtMs int64 `db:"checkpoint_at"`
}

// store is the log's tables in db.
type store struct{ db *sqlx.DB }

func (s store) postgres() bool { return s.db.DriverName() == "postgres" }

// head reads the screening's head; a screening with no record has the zero head.
func (s store) head(ctx context.Context, screening string) (head, error) {
	var h head
	err := s.db.GetContext(ctx, &h, s.db.Rebind(`SELECT size, stream_id, checkpoint, checkpoint_size, checkpoint_at FROM admission_log_heads WHERE screening = ?`), screening)
	if errors.Is(err, sql.ErrNoRows) {
		return head{}, nil
	}
	if err != nil {
		return head{}, fmt.Errorf("fairness: the head of %s: %w", screening, err)
	}
	return h, nil
}

// batch is records to append after a head of size `from`: their texts with the final newline, the stored
// hashes they add (tlog's indexes), the place each names (0: none), and the stream id of the last.
type batch struct {
	from     int64
	records  [][]byte
	seqs     []int64
	hashes   map[int64]tlog.Hash
	streamID string
}

// errMoved says another writer appended since this one read the head: it reads again.
var errMoved = errors.New("the log moved under this writer")

// append writes b in one transaction, provided the head is still at b.from (else errMoved).
func (s store) append(ctx context.Context, screening string, b batch) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fairness: append to %s: %w", screening, err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO admission_log_heads (screening) VALUES (?) ON CONFLICT DO NOTHING`), screening); err != nil {
		return fmt.Errorf("fairness: append to %s: %w", screening, err)
	}
	lock := ""
	if s.postgres() {
		lock = " FOR UPDATE"
	}
	var size int64
	if err := tx.GetContext(ctx, &size, tx.Rebind(`SELECT size FROM admission_log_heads WHERE screening = ?`+lock), screening); err != nil {
		return fmt.Errorf("fairness: append to %s: %w", screening, err)
	}
	if size != b.from {
		return errMoved
	}
	records := make([][]any, len(b.records))
	for i, r := range b.records {
		var seq any
		if b.seqs[i] > 0 {
			seq = b.seqs[i]
		}
		records[i] = []any{screening, b.from + int64(i), strings.TrimSuffix(string(r), "\n"), seq}
	}
	if err := insertRows(ctx, tx, `admission_log (screening, idx, record, seq)`, records); err != nil {
		return fmt.Errorf("fairness: append to %s: records: %w", screening, err)
	}
	hashes := make([][]any, 0, len(b.hashes))
	for id, h := range b.hashes {
		hashes = append(hashes, []any{screening, id, h[:]})
	}
	if err := insertRows(ctx, tx, `admission_log_hashes (screening, id, hash)`, hashes); err != nil {
		return fmt.Errorf("fairness: append to %s: hashes: %w", screening, err)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE admission_log_heads SET size = ?, stream_id = ? WHERE screening = ?`),
		b.from+int64(len(b.records)), b.streamID, screening); err != nil {
		return fmt.Errorf("fairness: append to %s: head: %w", screening, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fairness: append to %s: %w", screening, err)
	}
	return nil
}

// insertRows inserts rows into table ("name (columns)"), a few hundred to a statement.
func insertRows(ctx context.Context, tx *sqlx.Tx, table string, rows [][]any) error {
	const rowsPerInsert = 200
	for start := 0; start < len(rows); start += rowsPerInsert {
		chunk := rows[start:min(start+rowsPerInsert, len(rows))]
		one := "(?" + strings.Repeat(", ?", len(chunk[0])-1) + ")"
		q := "INSERT INTO " + table + " VALUES " + one + strings.Repeat(", "+one, len(chunk)-1)
		args := make([]any, 0, len(chunk)*len(chunk[0]))
		for _, r := range chunk {
			args = append(args, r...)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(q), args...); err != nil {
			return err
		}
	}
	return nil
}

// setCheckpoint keeps a signed checkpoint of size records, and when (now: it was signed a moment ago),
// unless a larger one is already kept.
func (s store) setCheckpoint(ctx context.Context, screening string, size int64, signed []byte) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE admission_log_heads SET checkpoint = ?, checkpoint_size = ?, checkpoint_at = ? WHERE screening = ? AND checkpoint_size <= ?`),
		string(signed), size, time.Now().UnixMilli(), screening, size)
	if err != nil {
		return fmt.Errorf("fairness: the checkpoint of %s: %w", screening, err)
	}
	return nil
}

// hashes reads the stored hashes of ids.
func (s store) hashes(ctx context.Context, screening string, ids []int64) (map[int64]tlog.Hash, error) {
	out := make(map[int64]tlog.Hash, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	q, args, err := sqlx.In(`SELECT id, hash FROM admission_log_hashes WHERE screening = ? AND id IN (?)`, screening, ids)
	if err != nil {
		return nil, fmt.Errorf("fairness: hashes of %s: %w", screening, err)
	}
	rows, err := s.db.QueryxContext(ctx, s.db.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("fairness: hashes of %s: %w", screening, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, fmt.Errorf("fairness: hashes of %s: %w", screening, err)
		}
		if len(raw) != tlog.HashSize {
			return nil, fmt.Errorf("fairness: hash %d of %s has %d bytes", id, screening, len(raw))
		}
		var h tlog.Hash
		copy(h[:], raw)
		out[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fairness: hashes of %s: %w", screening, err)
	}
	return out, nil
}

// hashReader reads stored hashes of the screening from the database, in the order asked.
func (s store) hashReader(ctx context.Context, screening string) tlog.HashReaderFunc {
	return func(ids []int64) ([]tlog.Hash, error) {
		found, err := s.hashes(ctx, screening, ids)
		if err != nil {
			return nil, err
		}
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			h, ok := found[id]
			if !ok {
				return nil, fmt.Errorf("fairness: hash %d of %s is not stored", id, screening)
			}
			out[i] = h
		}
		return out, nil
	}
}

// records reads records [start, end) of the screening, each with its final newline.
func (s store) records(ctx context.Context, screening string, start, end int64) ([][]byte, error) {
	var texts []string
	if err := s.db.SelectContext(ctx, &texts, s.db.Rebind(`SELECT record FROM admission_log WHERE screening = ? AND idx >= ? AND idx < ? ORDER BY idx`),
		screening, start, end); err != nil {
		return nil, fmt.Errorf("fairness: records of %s: %w", screening, err)
	}
	if int64(len(texts)) != end-start {
		return nil, fmt.Errorf("fairness: records %d to %d of %s: %d stored", start, end, screening, len(texts))
	}
	out := make([][]byte, len(texts))
	for i, t := range texts {
		out[i] = []byte(t + "\n")
	}
	return out, nil
}

// placeIndex finds the record that gave place seq, below size: its index and text (ok false: none).
func (s store) placeIndex(ctx context.Context, screening string, seq, size int64) (int64, string, bool, error) {
	var row struct {
		Idx    int64  `db:"idx"`
		Record string `db:"record"`
	}
	err := s.db.GetContext(ctx, &row, s.db.Rebind(`SELECT idx, record FROM admission_log WHERE screening = ? AND seq = ? AND idx < ? ORDER BY idx LIMIT 1`),
		screening, seq, size)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("fairness: place %d of %s: %w", seq, screening, err)
	}
	return row.Idx, row.Record, true, nil
}

// lastPlace is the highest place the screening's log holds (0: none).
func (s store) lastPlace(ctx context.Context, screening string) (int64, error) {
	var last sql.NullInt64
	if err := s.db.GetContext(ctx, &last, s.db.Rebind(`SELECT MAX(seq) FROM admission_log WHERE screening = ?`), screening); err != nil {
		return 0, fmt.Errorf("fairness: the last place of %s: %w", screening, err)
	}
	return last.Int64, nil
}
