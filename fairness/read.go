// What the public routes read from the log (docs/admission-log.md, "Routes"), each bounded: the latest
// checkpoint, a tile, a range of records, a place's inclusion proof; and the receipts a token's first
// message carries.

package fairness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/queue"
)

// ErrNoLog says the screening's log has no signed checkpoint yet (or there is no such screening).
var ErrNoLog = errors.New("no admission log yet")

// ErrNotFound says a tile, a range or a place the log does not hold (yet).
var ErrNotFound = errors.New("not in the admission log")

// ErrPending says a place the log has not reached yet, or holds but its latest checkpoint does not cover
// yet: a second or two at most.
var ErrPending = errors.New("in the admission log, not yet in a signed checkpoint")

// MaxRecords bounds the records one Records call returns.
const MaxRecords = 1000

// Checkpoint returns the screening's latest signed checkpoint and its size.
func (l *Log) Checkpoint(ctx context.Context, screening string) ([]byte, int64, error) {
	h, err := l.store.head(ctx, screening)
	if err != nil {
		return nil, 0, err
	}
	if h.Checkpoint == "" {
		return nil, 0, ErrNoLog
	}
	return []byte(h.Checkpoint), h.CheckpointSize, nil
}

// Tile returns the tile at path (tlog's layout, "tile/8/…") of the screening's log as of its latest
// checkpoint, and whether it is full (never changes).
func (l *Log) Tile(ctx context.Context, screening, path string) ([]byte, bool, error) {
	_, size, err := l.Checkpoint(ctx, screening)
	if err != nil {
		return nil, false, err
	}
	data, full, err := fairlog.ReadTile(path, size, l.store.hashReader(ctx, screening), func(start, end int64) ([][]byte, error) {
		return l.store.records(ctx, screening, start, end)
	})
	if errors.Is(err, fairlog.ErrNotFound) {
		return nil, false, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return data, full, err
}

// Records returns records start to end−1 (at most MaxRecords) of the log as of its latest checkpoint,
// without their newlines.
func (l *Log) Records(ctx context.Context, screening string, start, end int64) ([]string, error) {
	_, size, err := l.Checkpoint(ctx, screening)
	if err != nil {
		return nil, err
	}
	if start < 0 || end < start || end-start > MaxRecords {
		return nil, fmt.Errorf("fairness: records %d to %d: want 0 ≤ start ≤ end, at most %d", start, end, MaxRecords)
	}
	if end > size {
		return nil, fmt.Errorf("%w: records %d to %d of a log of %d", ErrNotFound, start, end, size)
	}
	recs, err := l.store.records(ctx, screening, start, end)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r[:len(r)-1])
	}
	return out, nil
}

// Proof is where a place's record is in the log and the hashes that prove it against a checkpoint.
type Proof struct {
	Index  int64       `json:"index"`
	Record string      `json:"record"`
	Size   int64       `json:"size"`
	Root   tlog.Hash   `json:"root"`
	Proof  []tlog.Hash `json:"proof"`
}

// Proof returns the proof of place seq's record against the latest checkpoint.
func (l *Log) Proof(ctx context.Context, screening string, seq int64) (Proof, error) {
	h, err := l.store.head(ctx, screening)
	if err != nil {
		return Proof{}, err
	}
	idx, text, ok, err := l.store.placeIndex(ctx, screening, seq, h.Size)
	if err != nil {
		return Proof{}, err
	}
	if !ok {
		last, err := l.store.lastPlace(ctx, screening)
		if err != nil {
			return Proof{}, err
		}
		if seq > last {
			// Not reached yet: the writer appends a place within 100 ms, a new screening's within 2 s.
			return Proof{}, fmt.Errorf("%w: place %d", ErrPending, seq)
		}
		return Proof{}, fmt.Errorf("%w: place %d", ErrNotFound, seq)
	}
	if h.Checkpoint == "" || idx >= h.CheckpointSize {
		return Proof{}, fmt.Errorf("%w: place %d", ErrPending, seq)
	}
	// The root is the signed checkpoint's, not computed again.
	cp, err := fairlog.OpenCheckpoint([]byte(h.Checkpoint), l.key.VerifierKey())
	if err != nil {
		return Proof{}, fmt.Errorf("fairness: the checkpoint of %s: %w", screening, err)
	}
	p, err := tlog.ProveRecord(cp.Size, idx, l.store.hashReader(ctx, screening))
	if err != nil {
		return Proof{}, fmt.Errorf("fairness: prove place %d of %s: %w", seq, screening, err)
	}
	return Proof{Index: idx, Record: text, Size: cp.Size, Root: cp.Root, Proof: p}, nil
}

// Receipt signs the receipt of token's place p in the screening (docs/admission-log.md, "Receipts"): the
// same bytes for the same place, so a reconnect gets the receipt it got first.
func (l *Log) Receipt(screening, token string, p queue.Placed) ([]byte, error) {
	return l.key.SignReceipt(fairlog.Receipt{Screening: screening, Seq: p.Seq, Entry: p.Entry, TokenHash: fairlog.TokenHash(token),
		Time: p.At.UnixMilli()})
}

// Status is what the operator sees of a screening's log (the control room): the records stored, the latest
// checkpoint's size and when it was signed (zero: none yet, or signed before that was recorded), and the
// records still waiting in Redis to be stored.
type Status struct {
	Size           int64
	CheckpointSize int64
	CheckpointAt   time.Time
	Backlog        int64
}

// Status reads the screening's log as the writer left it: a screening with no record has the zero Status.
func (l *Log) Status(ctx context.Context, screening string) (Status, error) {
	h, err := l.store.head(ctx, screening)
	if err != nil {
		return Status{}, err
	}
	backlog, err := l.q.LogBacklog(ctx, screening, h.StreamID)
	if err != nil {
		return Status{}, err
	}
	st := Status{Size: h.Size, CheckpointSize: h.CheckpointSize, Backlog: backlog}
	if h.Checkpoint != "" && h.CheckpointAtMs > 0 {
		st.CheckpointAt = time.UnixMilli(h.CheckpointAtMs)
	}
	return st, nil
}

// Snapshot is a screening's log as of its latest checkpoint when the snapshot was taken: its reads serve
// that tree, as the public routes served it then, whatever the log has become since (it only grows).
type Snapshot struct {
	// Checkpoint is the signed checkpoint, of Size records.
	Checkpoint []byte
	Size       int64
	l          *Log
	screening  string
}

// Snapshot takes the screening's log as of its latest checkpoint (ErrNoLog: none yet).
func (l *Log) Snapshot(ctx context.Context, screening string) (*Snapshot, error) {
	signed, size, err := l.Checkpoint(ctx, screening)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Checkpoint: signed, Size: size, l: l, screening: screening}, nil
}

// Tile returns the tile at path (tlog's layout, "tile/8/…") of the snapshot's tree: the bytes the public
// tile route served for it.
func (s *Snapshot) Tile(ctx context.Context, path string) ([]byte, error) {
	data, _, err := fairlog.ReadTile(path, s.Size, s.l.store.hashReader(ctx, s.screening), func(start, end int64) ([][]byte, error) {
		return s.l.store.records(ctx, s.screening, start, end)
	})
	if errors.Is(err, fairlog.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return data, err
}

// Records returns records start to end−1 of the snapshot, each with its final newline.
func (s *Snapshot) Records(ctx context.Context, start, end int64) ([][]byte, error) {
	if start < 0 || end < start || end > s.Size {
		return nil, fmt.Errorf("%w: records %d to %d of a log of %d", ErrNotFound, start, end, s.Size)
	}
	return s.l.store.records(ctx, s.screening, start, end)
}
