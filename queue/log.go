// The admission log's side in Redis (docs/admission-log.md): the scripts that change a line append the
// records that say so to the screening's log stream, in the same atomic step, so the stream's order is the
// order the line changed in, whichever instance ran the script. The log's writer (package fairness) reads
// the stream (LogRecords), stores the records in the database and trims what it stored (TrimLog).
//
// Before the sale opens, the pre-queue's shuffle keys come from the screening's seed (seedLua): drawn at
// the first early arrival, its commitment logged first, revealed at the opening (open.lua), so anyone can
// recompute the order (fairlog.ShuffleKey).

package queue

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/waitroom/waitroom/fairlog"
)

// seedLua draws the screening's shuffle seed once, while its line has not opened and its sale time has not
// come, and logs its commitment as the first record of the pre-queue, with the beacon round it names.
//
// KEYS[1] seed    STRING the seed (hex)
// KEYS[2] opened  STRING present once the line is open
// KEYS[3] log     STREAM the admission log
// KEYS[4] beacon  STRING "URL round": the beacon round the commitment names (beacon.go), if it names one
// ARGV[1] a fresh seed (hex), or "" to ask only whether one would be drawn; ARGV[2] its commitment (hex
// SHA-256), ARGV[3] now (Unix ms), ARGV[4] the sale time (Unix ms), ARGV[5] "URL round" or "", ARGV[6]
// the commitment's beacon fields (" beacon=URL round=R", " beacon=none" or "")
//
// Returns the seed, or nil when there is none and none is drawn (the line is open, or its sale time came),
// or "" when ARGV[1] is "" and one would be drawn.
var seedScript = redis.NewScript(`local seed = redis.call('GET', KEYS[1])
if seed or redis.call('EXISTS', KEYS[2]) == 1 or tonumber(ARGV[3]) >= tonumber(ARGV[4]) then
  return seed
end
if ARGV[1] == '' then
  return ''
end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[5] ~= '' then
  redis.call('SET', KEYS[4], ARGV[5])
end
redis.call('XADD', KEYS[3], '*', 'r', 'commit t=' .. ARGV[3] .. ' seed=' .. ARGV[2] .. ARGV[6])
return ARGV[1]`)

// pauseScript and resumeScript pause and resume a line, logging the change when there is one (KEYS[2] the
// log; ARGV[1] now, ARGV[2] '1' when the log is kept).
var (
	pauseScript = redis.NewScript(`if redis.call('SET', KEYS[1], '1', 'NX') and ARGV[2] == '1' then
  redis.call('XADD', KEYS[2], '*', 'r', 'pause t=' .. ARGV[1])
end
return 1`)
	resumeScript = redis.NewScript(`if redis.call('DEL', KEYS[1]) == 1 and ARGV[2] == '1' then
  redis.call('XADD', KEYS[2], '*', 'r', 'resume t=' .. ARGV[1])
end
redis.call('SET', KEYS[3], '1', 'PX', ARGV[3])
return 1`)
)

// SetLog makes the queue keep the admission log: every change of a line is logged, the pre-queue shuffled
// by its seed. Call it before the queue is used.
func (q *Queue) SetLog(on bool) { q.logged = on }

// Logged reports whether the queue keeps the admission log.
func (q *Queue) Logged() bool { return q.logged }

// logFlag is the scripts' argument that says whether to log.
func (q *Queue) logFlag() string {
	if q.logged {
		return "1"
	}
	return "0"
}

// logHash is the hash the log names token by, or "" when the log is not kept.
func (q *Queue) logHash(token string) string {
	if !q.logged {
		return ""
	}
	return fairlog.TokenHash(token)
}

// seedMemo keeps each screening's seed as read from Redis, for a second, and so its absence: an early
// crowd's registrations need the seed each, and every registration of an open line would otherwise ask
// Redis for a seed it will never have; a reset (which drops it) is seen within that second.
type seedMemo struct {
	mu   sync.Mutex
	byID map[string]seedRead
	// reads shares one read of a screening's seed among the registrations that find the memo stale
	// together: a burst's hundreds of handshakes would otherwise each send Redis a script of their own,
	// once a second, and wait for a connection behind each other.
	reads singleflight.Group
}

type seedRead struct {
	seed []byte // nil: none
	at   time.Time
}

const seedMemoAge = time.Second

// preKey is the pre-queue key of the token whose log hash is hash: from the screening's seed when the log
// is kept and the pre-queue has one, else drawn at random (docs/fairness.md).
func (q *Queue) preKey(ctx context.Context, screening, hash string, opensAt time.Time) (int64, error) {
	if hash == "" {
		return shuffleKey(), nil
	}
	seed, err := q.seed(ctx, screening, opensAt)
	if err != nil || seed == nil {
		return shuffleKey(), err
	}
	return int64(fairlog.ShuffleKey(seed, hash)), nil
}

// seed returns the screening's shuffle seed, drawing it if its pre-queue has none yet (seedScript). With a
// beacon, it first asks whether one would be drawn, and only then fetches the beacon's chain info (once
// per process) to name the round the seed will be mixed with.
func (q *Queue) seed(ctx context.Context, screening string, opensAt time.Time) ([]byte, error) {
	q.seeds.mu.Lock()
	r, ok := q.seeds.byID[screening]
	q.seeds.mu.Unlock()
	if ok && q.now().Sub(r.at) < seedMemoAge {
		return r.seed, nil
	}
	// One read for all who wait on it; one caller's end (its socket gone) does not end the others'.
	v, err, _ := q.seeds.reads.Do(screening, func() (any, error) {
		return q.readSeed(context.WithoutCancel(ctx), screening, opensAt)
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// readSeed reads the screening's seed from Redis, drawing it if its pre-queue has none yet (seedScript),
// and remembers the answer for seedMemoAge.
func (q *Queue) readSeed(ctx context.Context, screening string, opensAt time.Time) ([]byte, error) {
	now := q.now()
	fresh := fairlog.NewSeed()
	k := q.keys(screening)
	run := func(seed []byte, named, fields string) *redis.Cmd {
		drawn := ""
		if seed != nil {
			drawn = hex.EncodeToString(seed)
		}
		return seedScript.Run(ctx, q.rdb, []string{k.seed, k.opened, k.log, k.beacon},
			drawn, fairlog.SeedCommit(fresh), now.UnixMilli(), opensAt.UnixMilli(), named, fields)
	}
	var got string
	var err error
	if q.beacon == nil {
		got, err = run(fresh, "", "").Text()
	} else if got, err = run(nil, "", "").Text(); err == nil && got == "" {
		named, fields := q.beaconRound(ctx, screening, opensAt)
		got, err = run(fresh, named, fields).Text()
	}
	var seed []byte // nil: none, and none is drawn any more (the line is open, or its sale time came)
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return nil, fmt.Errorf("queue: the shuffle seed of %s: %w", screening, err)
	default:
		if seed, err = hex.DecodeString(got); err != nil {
			return nil, fmt.Errorf("queue: the shuffle seed of %s: %w", screening, err)
		}
	}
	q.seeds.mu.Lock()
	if q.seeds.byID == nil {
		q.seeds.byID = map[string]seedRead{}
	}
	q.seeds.byID[screening] = seedRead{seed: seed, at: now}
	q.seeds.mu.Unlock()
	return seed, nil
}

// LogRecord is one record of the admission log as Redis holds it: its stream id (the log's order) and its
// text, without the final newline.
type LogRecord struct {
	ID   string
	Text string
}

// LogRecords returns up to max of the screening's records logged after the stream id after ("" or "0":
// from the first), oldest first.
func (q *Queue) LogRecords(ctx context.Context, screening, after string, max int64) ([]LogRecord, error) {
	start := "-"
	if after != "" && after != "0" {
		next, err := nextStreamID(after)
		if err != nil {
			return nil, fmt.Errorf("queue: the log of %s: %w", screening, err)
		}
		start = next
	}
	msgs, err := q.rdb.XRangeN(ctx, q.keys(screening).log, start, "+", max).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: the log of %s: %w", screening, err)
	}
	out := make([]LogRecord, 0, len(msgs))
	for _, m := range msgs {
		text, _ := m.Values["r"].(string)
		out = append(out, LogRecord{ID: m.ID, Text: text})
	}
	return out, nil
}

// nextStreamID is the stream id right after id ("ms-seq").
func nextStreamID(id string) (string, error) {
	ms, seq, ok := strings.Cut(id, "-")
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || err != nil {
		return "", fmt.Errorf("a stream id %q, want ms-seq", id)
	}
	return ms + "-" + strconv.FormatUint(n+1, 10), nil
}

// TrimLog drops the screening's records up to and including the stream id upTo: they are stored.
func (q *Queue) TrimLog(ctx context.Context, screening, upTo string) error {
	// XTRIM MINID keeps upTo itself; the next read starts after it.
	if err := q.rdb.XTrimMinID(ctx, q.keys(screening).log, upTo).Err(); err != nil {
		return fmt.Errorf("queue: trim the log of %s: %w", screening, err)
	}
	return nil
}
