// Package fairness keeps the server's side of the admission log (docs/admission-log.md): the writer that
// moves each screening's records from Redis (where the line's scripts append them, package queue) into the
// database in the same order, computing the log's Merkle tree (tlog) as it goes, and signs a checkpoint
// about every second; the reads the public routes serve (checkpoint, tiles, records, a place's proof); and
// the receipts a token's first message carries. Package fairlog, which imports nothing of this project,
// defines the format and checks it from outside.
//
// One writer at a time across instances: the one holding the log's lease in Redis; and each append locks
// the screening's head row first and refuses to write past a head another writer moved, so even two
// writers (a lease lost during a slow append) never interleave.
package fairness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/ids"
	"github.com/waitroom/waitroom/queue"
)

const (
	// appendEvery is how often the writer moves new records to the database.
	appendEvery = 100 * time.Millisecond
	// checkpointEvery is how often, at most, a screening whose log grew gets a new signed checkpoint.
	checkpointEvery = time.Second
	// readBatch bounds the records one append reads from Redis.
	readBatch = 2000
	// listEvery is how often the writer reads again which screenings to follow.
	listEvery = 2 * time.Second
	// lease is how long the writer's lease lasts without a renewal.
	lease = 5 * time.Second
	// memoHashes bounds the stored hashes a writer keeps in memory per screening (the rest are read back).
	memoHashes = 1 << 20
)

// Log is one instance's part in the admission log.
type Log struct {
	store   store
	q       *queue.Queue
	key     *fairlog.Key
	owner   string
	log     *slog.Logger
	metrics *Metrics
	now     func() time.Time

	mu    sync.Mutex
	trees map[string]*tree // the writer's view of each screening's log
}

// tree is the writer's view of one screening's log: how many records are stored, the last stream id, the
// stored hashes it wrote or read (a cache of the database's), and the last checkpoint it signed.
type tree struct {
	mu       sync.Mutex // one append at a time
	loaded   bool
	size     int64
	streamID string
	hashes   map[int64]tlog.Hash
	signed   int64
	signedAt time.Time
}

// New returns the log kept in db, read from q's streams, signed with key. m may be nil.
func New(db *sqlx.DB, q *queue.Queue, key *fairlog.Key, instance string, m *Metrics, log *slog.Logger) *Log {
	if log == nil {
		log = slog.Default()
	}
	return &Log{store: store{db: db}, q: q, key: key, owner: instance + "/" + ids.New()[:8], log: log, metrics: m, now: time.Now,
		trees: map[string]*tree{}}
}

// Key is the key that signs the log's checkpoints and receipts.
func (l *Log) Key() *fairlog.Key { return l.key }

// Run appends every followed screening's new records every appendEvery while this instance holds the log's
// lease, and signs their checkpoints, until ctx ends.
func (l *Log) Run(ctx context.Context, sales queue.Screenings) error {
	t := time.NewTicker(appendEvery)
	defer t.Stop()
	var followed []string
	var listed time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		held, err := l.q.RenewLease(ctx, "fairlog", l.owner, lease)
		if err != nil || !held {
			l.forget() // another writer may move the heads meanwhile
			continue
		}
		if time.Since(listed) >= listEvery {
			if list, err := sales.Sales(ctx, l.now().Add(time.Hour)); err == nil {
				followed = followed[:0]
				for _, s := range list {
					followed = append(followed, s.ID)
				}
				listed = time.Now()
			} else if ctx.Err() == nil {
				l.log.Warn("fairness: list the screenings", "err", err)
			}
		}
		for _, id := range followed {
			if err := l.Step(ctx, id); err != nil && ctx.Err() == nil {
				l.log.Warn("fairness: append to the admission log", "screening", id, "err", err)
			}
		}
	}
}

// forget drops the writer's view of every log: read again from the database at the next append.
func (l *Log) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.trees)
}

// Step appends the screening's records waiting in Redis (all of them, a batch at a time) and signs a
// checkpoint when the last is older than checkpointEvery, or when there is none yet. Run calls it; a test
// calls it to move a log on at once.
func (l *Log) Step(ctx context.Context, screening string) error {
	l.mu.Lock()
	t := l.trees[screening]
	if t == nil {
		t = &tree{}
		l.trees[screening] = t
	}
	l.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		n, err := l.appendBatch(ctx, screening, t)
		if err != nil {
			return err
		}
		if n < readBatch {
			break
		}
	}
	if t.signed < t.size && (l.now().Sub(t.signedAt) >= checkpointEvery || t.signed == 0) {
		return l.checkpoint(ctx, screening, t)
	}
	return nil
}

// appendBatch moves up to readBatch records from Redis to the database and returns how many.
func (l *Log) appendBatch(ctx context.Context, screening string, t *tree) (int, error) {
	if !t.loaded {
		h, err := l.store.head(ctx, screening)
		if err != nil {
			return 0, err
		}
		t.loaded, t.size, t.streamID, t.hashes, t.signed = true, h.Size, h.StreamID, map[int64]tlog.Hash{}, h.CheckpointSize
	}
	recs, err := l.q.LogRecords(ctx, screening, t.streamID, readBatch)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	start := time.Now()
	b := batch{from: t.size, records: make([][]byte, len(recs)), seqs: make([]int64, len(recs)), hashes: map[int64]tlog.Hash{},
		streamID: recs[len(recs)-1].ID}
	reader := l.memoReader(ctx, screening, t, b.hashes)
	for i, r := range recs {
		data := []byte(r.Text + "\n")
		rec, err := fairlog.ParseRecord(data)
		if err != nil {
			// Kept all the same: the log says what the line did; a verifier will say what is wrong with it.
			l.log.Error("fairness: a malformed record in the admission log", "screening", screening, "record", r.Text, "err", err)
		}
		n := t.size + int64(i)
		hs, err := tlog.StoredHashes(n, data, reader)
		if err != nil {
			return 0, fmt.Errorf("fairness: hash record %d of %s: %w", n, screening, err)
		}
		base := tlog.StoredHashIndex(0, n)
		for j, h := range hs {
			b.hashes[base+int64(j)] = h
		}
		b.records[i] = data
		if rec.Kind == fairlog.KindPlace {
			b.seqs[i] = rec.Seq
		}
	}
	if err := l.store.append(ctx, screening, b); err != nil {
		if errors.Is(err, errMoved) {
			t.loaded = false
			return 0, nil
		}
		return 0, err
	}
	if len(t.hashes)+len(b.hashes) > memoHashes {
		clear(t.hashes)
	}
	for id, h := range b.hashes {
		t.hashes[id] = h
	}
	t.size += int64(len(recs))
	t.streamID = b.streamID
	if err := l.q.TrimLog(ctx, screening, b.streamID); err != nil {
		l.log.Warn("fairness: trim the stored records from Redis", "screening", screening, "err", err)
	}
	if l.metrics != nil {
		l.metrics.Records.Add(float64(len(recs)))
		l.metrics.AppendSeconds.Observe(time.Since(start).Seconds())
	}
	return len(recs), nil
}

// memoReader reads stored hashes from fresh (this batch's), then the tree's memo, then the database (and
// keeps what it read there in the memo).
func (l *Log) memoReader(ctx context.Context, screening string, t *tree, fresh map[int64]tlog.Hash) tlog.HashReaderFunc {
	return func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		var missing []int64 // positions in ids
		for i, id := range ids {
			if h, ok := fresh[id]; ok {
				out[i] = h
			} else if h, ok := t.hashes[id]; ok {
				out[i] = h
			} else {
				missing = append(missing, int64(i))
			}
		}
		if len(missing) == 0 {
			return out, nil
		}
		want := make([]int64, len(missing))
		for j, i := range missing {
			want[j] = ids[i]
		}
		read, err := l.store.hashReader(ctx, screening)(want)
		if err != nil {
			return nil, err
		}
		for j, i := range missing {
			t.hashes[ids[i]] = read[j]
			out[i] = read[j]
		}
		return out, nil
	}
}

// checkpoint signs the tree as it stands and keeps the signature.
func (l *Log) checkpoint(ctx context.Context, screening string, t *tree) error {
	root, err := tlog.TreeHash(t.size, l.memoReader(ctx, screening, t, nil))
	if err != nil {
		return fmt.Errorf("fairness: the tree of %s: %w", screening, err)
	}
	signed, err := l.key.SignCheckpoint(screening, t.size, root)
	if err != nil {
		return fmt.Errorf("fairness: sign the checkpoint of %s: %w", screening, err)
	}
	if err := l.store.setCheckpoint(ctx, screening, t.size, signed); err != nil {
		return err
	}
	t.signed, t.signedAt = t.size, l.now()
	if l.metrics != nil {
		l.metrics.Checkpoints.Inc()
	}
	return nil
}

// Metrics counts the log's work.
type Metrics struct {
	Records       prometheus.Counter
	Checkpoints   prometheus.Counter
	AppendSeconds prometheus.Histogram
}

// NewMetrics registers the log's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Records: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "admission_log", Name: "records_total",
			Help: "Records appended to the admission logs (docs/admission-log.md)."}),
		Checkpoints: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "admission_log", Name: "checkpoints_total",
			Help: "Checkpoints of the admission logs signed."}),
		AppendSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "waitroom", Subsystem: "admission_log", Name: "append_seconds",
			Help: "How long one append of a batch of records to the database took.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 12)}),
	}
	reg.MustRegister(m.Records, m.Checkpoints, m.AppendSeconds)
	return m
}
