// Package queue owns the waiting line in Redis: registration (idempotent, first come first served), position,
// atomic admission, the active set, the per-screening admission lock, the scheduler that sets the pace, and
// the signed passes admission hands out.
//
// Guarantees: a registered token is always in exactly one of waiting, active, or (after leave/expiry/close)
// gone by a documented step; an admission tick pops and activates in one Lua script, so nobody is popped and
// lost; at most batch_size are admitted per tick and never more than max_active at once. All keys of one
// screening share the hash tag {screening}, so every script runs on one Redis Cluster slot.
package queue

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrClosed means the screening is sold out: its line is closed.
	ErrClosed = errors.New("queue closed: sold out")
	// ErrBadToken means a client sent a token that is not one this package hands out.
	ErrBadToken = errors.New("malformed token")
	// ErrBadScreening means a screening id that cannot name keys.
	ErrBadScreening = errors.New("malformed screening id")
)

var (
	//go:embed lua/register.lua
	registerLua string
	//go:embed lua/admit.lua
	admitLua string
	//go:embed lua/lock.lua
	lockLua string
	//go:embed lua/unlock.lua
	unlockLua string
	//go:embed lua/finish.lua
	finishLua string
	//go:embed lua/leave.lua
	leaveLua string
	//go:embed lua/close.lua
	closeLua string
	//go:embed lua/line.lua
	lineLua string
	//go:embed lua/open.lua
	openLua string
	//go:embed lua/disconnect.lua
	disconnectLua string
	//go:embed lua/restore.lua
	restoreLua string

	registerScript   = redis.NewScript(registerLua)
	admitScript      = redis.NewScript(admitLua)
	lockScript       = redis.NewScript(lockLua)
	unlockScript     = redis.NewScript(unlockLua)
	finishScript     = redis.NewScript(finishLua)
	leaveScript      = redis.NewScript(leaveLua)
	closeScript      = redis.NewScript(closeLua)
	lineScript       = redis.NewScript(lineLua)
	openScript       = redis.NewScript(openLua)
	disconnectScript = redis.NewScript(disconnectLua)
	restoreScript    = redis.NewScript(restoreLua)
)

var (
	screeningRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	tokenRe     = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// ValidScreening reports whether id can name a screening's keys.
func ValidScreening(id string) bool { return screeningRe.MatchString(id) }

// ValidToken reports whether t has the form of a token this package hands out (128 random bits, hex).
func ValidToken(t string) bool { return tokenRe.MatchString(t) }

// NewToken returns a fresh random 128-bit token.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥ 1.24 it panics instead).
	return hex.EncodeToString(b[:])
}

// Key names the key `name` of a screening under prefix: "<prefix>{<screening>}:<name>". The braces are the
// Redis Cluster hash tag, so every key of a screening lives in one slot. Other packages that keep
// per-screening state in Redis (booking's seat locks) use it too, so their scripts can touch queue keys.
func Key(prefix, screening, name string) string {
	return prefix + "{" + screening + "}:" + name
}

// ClosedKey is the key whose presence means the screening is sold out; booking's seat-lock script reads it
// so a request after the last seat is refused before any lock.
func ClosedKey(prefix, screening string) string { return Key(prefix, screening, "closed") }

type keys struct {
	waiting, active, seq, closed, changed, freed, spent, lock, lastTick, events string
	head, left, leftNew, epoch                                                  string
	pre, opened, paused, gone, conns, stats, hold, restored, admitAt            string
}

// Queue is the waiting line of every screening, in one Redis.
type Queue struct {
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time

	pubsubMu sync.Mutex
	pubsub   pubsubMode // how events travel: found out on first use

	calls  batcher[scriptCall] // registrations and count-offs on their way to Redis together (batch.go)
	checks batcher[passCheck]  // pass checks on their way to Redis together (pass.go)

	metrics *Metrics // where the count-offs' resends and losses are counted; nil: nowhere (SetMetrics)

	wakersMu sync.Mutex
	wakers   map[*Scheduler]struct{} // the schedulers whose Run runs on this queue: woken when a slot is freed (wake.go)
}

// New returns the queue kept in rdb under prefix.
func New(rdb redis.UniversalClient, prefix string) *Queue {
	q := &Queue{rdb: rdb, prefix: prefix, now: time.Now}
	q.calls = batcher[scriptCall]{max: batchSize, send: q.sendScripts}
	q.checks = batcher[passCheck]{max: batchSize, send: q.sendChecks}
	return q
}

// SetMetrics makes q count its count-offs' resends and losses in m (the scheduler's metrics). Call it
// before q is used.
func (q *Queue) SetMetrics(m *Metrics) { q.metrics = m }

// Prefix is the key prefix this queue writes under.
func (q *Queue) Prefix() string { return q.prefix }

func (q *Queue) keys(screening string) keys {
	k := func(name string) string { return Key(q.prefix, screening, name) }
	return keys{
		waiting: k("waiting"), active: k("active"), seq: k("seq"), closed: ClosedKey(q.prefix, screening), changed: k("changed"), freed: k("freed"), spent: k("spent"),
		lock: k("lock"), lastTick: k("tick"), events: k("events"),
		head: k("head"), left: k("left"), leftNew: k("leftnew"), epoch: k("epoch"),
		pre: k("pre"), opened: k("opened"), paused: k("paused"), gone: k("gone"), conns: k("conns"), stats: k("stats"), hold: k("hold"), restored: k("restored"),
		admitAt: k("admitat"),
	}
}

// State says where a token stands in one screening.
type State string

// The states a token can be in.
const (
	Waiting State = "waiting"
	// Pre: waiting in the pre-queue for the line to open (the sale time), when the order is shuffled.
	Pre      State = "pre"
	Admitted State = "admitted"
	Unknown  State = "unknown"
	Closed   State = "closed"
)

// Entry is a token's standing after Register or Status.
type Entry struct {
	Token string
	State State
	// Inserted is true when Register put the token in line now, false when it was already there.
	Inserted bool
	// ZeroBasedRank is the token's ZRANK in the line (0 = next to be admitted); the wire shows it + 1.
	ZeroBasedRank int64
	// Total is the line's length (ZCARD).
	Total int64
	// Seq is a waiting token's sequence number: its place in the order of arrival, from which every instance
	// computes its rank after each admission (see Line). 0 when not waiting.
	Seq int64
	// Epoch is the number of the last admission event when Register or Status answered (see Line): read
	// before the rest, so the standing is at least as new as that event.
	Epoch int64
	// Paused is true when Register found admission paused by the operator.
	Paused bool
	// ExpiresAt is when an admitted token's slot (and its pass) lapses.
	ExpiresAt time.Time

	mark string // a registration's mark, when Enter got no answer (Undo)
}

func (q *Queue) check(screening, token string) error {
	if !ValidScreening(screening) {
		return fmt.Errorf("queue: %q: %w", screening, ErrBadScreening)
	}
	if !ValidToken(token) {
		return fmt.Errorf("queue: %w", ErrBadToken)
	}
	return nil
}

// Register puts token in the line of a screening whose sale is open (see Enter).
func (q *Queue) Register(ctx context.Context, screening, token string) (Entry, error) {
	return q.Enter(ctx, screening, token, time.Time{})
}

// Enter puts token in the screening's line, or reports where it already stands: waiting (keeping its
// original place), in the pre-queue (Pre: the line opens at opensAt, when the pre-queue is shuffled; see
// Open), admitted (with the expiry of its slot), or closed (sold out: ErrClosed). An empty token gets a new
// random one. Each call counts one more socket of the token (see Disconnected).
//
// An error with the returned entry's Token set says the registration got no answer and may have run: the
// caller undoes it (Undo), so that a socket that never joined is not counted for ever, nor a fresh token,
// which its client never learnt, left in line for ever.
func (q *Queue) Enter(ctx context.Context, screening, token string, opensAt time.Time) (Entry, error) {
	return q.enter(ctx, screening, token, opensAt, randomID())
}

// enter is Enter with the registration's mark (register.lua) drawn by the caller.
func (q *Queue) enter(ctx context.Context, screening, token string, opensAt time.Time, mark string) (Entry, error) {
	if token == "" {
		token = NewToken()
	}
	if err := q.check(screening, token); err != nil {
		return Entry{}, err
	}
	k := q.keys(screening)
	res, err := q.register(ctx,
		[]string{k.waiting, k.active, k.seq, k.closed, k.changed, k.epoch, k.pre, k.opened, k.paused, k.gone, k.conns, q.regMark(screening, mark)},
		token, q.now().UnixMilli(), opensAt.UnixMilli(), shuffleKey(), countOffMark.Milliseconds())
	if err != nil {
		var e Entry
		if errors.Is(err, ErrQueued) || unanswered(err) {
			e = Entry{Token: token, mark: mark}
		}
		return e, fmt.Errorf("queue: register in %s: %w", screening, err)
	}
	if res[0] == "undone" {
		return Entry{}, fmt.Errorf("queue: register in %s: undone before it ran", screening)
	}
	e := Entry{Token: token}
	switch res[0] {
	case "closed":
		e.State = Closed
		return e, fmt.Errorf("queue: register in %s: %w", screening, ErrClosed)
	case "admitted":
		e.State = Admitted
		e.ExpiresAt, err = unixMilli(res[1])
	case "waiting", "pre":
		e.State = State(res[0].(string))
		e.ZeroBasedRank, e.Total = res[1].(int64), res[2].(int64)
		e.Inserted = res[3].(int64) == 1
		e.Seq, e.Epoch = res[4].(int64), res[5].(int64)
		e.Paused = res[6].(int64) == 1
		if e.State == Pre {
			e.ZeroBasedRank = 0 // a place in the pre-queue means nothing until the shuffle
		}
	default:
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("queue: register in %s: %w", screening, err)
	}
	return e, nil
}

// shuffleKey draws a pre-queue key uniformly from [0, 2^53), the integers a Redis score holds exactly: the
// order of independent uniform keys is a uniform random permutation (ties, 1 in 2^53 per pair, fall back
// to the token's order, itself random).
func shuffleKey() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 11)
}

// Disconnected counts off one socket of token. When it was the last and the token is still waiting, the
// token is noted gone: unless it registers again within the grace, the next tick (or the opening) drops it
// as abandoned.
//
// A count-off that gets no answer (Redis saturated, a connection broken) is sent again, up to
// countOffResends times: each carries a mark of its own in Redis (disconnect.lua), so one that did run and
// only lost its reply changes nothing the second time.
func (q *Queue) Disconnected(ctx context.Context, screening, token string) error {
	return q.countOff(ctx, screening, token, "")
}

// Undo undoes a registration that got no answer (Enter returned an error and an entry with its Token): if
// it ran, its socket is counted off, as Disconnected does (a fresh token is then noted gone, and dropped
// after the grace unless its client comes back with it); if it did not, it never will (its mark is set
// first, and the registration, should Redis still get it, does nothing). An entry without a Token, or one
// Enter returned without an error, has nothing to undo.
func (q *Queue) Undo(ctx context.Context, screening string, e Entry) error {
	if e.mark == "" {
		return nil
	}
	return q.countOff(ctx, screening, e.Token, q.regMark(screening, e.mark))
}

// regMark names the key that marks the registration mark ran (register.lua).
func (q *Queue) regMark(screening, mark string) string { return Key(q.prefix, screening, "reg:"+mark) }

// countOff runs disconnect.lua for one socket of token; with regMark, only if that registration ran.
func (q *Queue) countOff(ctx context.Context, screening, token, regMark string) error {
	if err := q.check(screening, token); err != nil {
		return err
	}
	k := q.keys(screening)
	keys := []string{k.waiting, k.pre, k.gone, k.conns, Key(q.prefix, screening, "off:"+randomID())}
	if regMark != "" {
		keys = append(keys, regMark)
	}
	if _, err := q.runResent(ctx, countOffResends, disconnectScript, keys, token, q.now().UnixMilli(), countOffMark.Milliseconds()); err != nil {
		return fmt.Errorf("queue: disconnect in %s: %w", screening, err)
	}
	return nil
}

const (
	// countOffResends bounds the resends of a count-off without an answer: with batchTimeout per try and
	// resendAfter doubling between them, it is given up about 25 s after it was first sent.
	countOffResends = 4
	// countOffMark is how long a count-off's or a registration's mark stays in Redis: longer than either is
	// sent again (about 25 s) or could arrive late (a pipeline past its 5 s), and short, as a crowd of
	// 100,000 leaves 100,000 marks (about 10 MB) for this long.
	countOffMark = time.Minute
)

// randomID is 96 random bits in hex: a count-off's or a registration's mark.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Status reports where token stands without changing anything.
func (q *Queue) Status(ctx context.Context, screening, token string) (Entry, error) {
	if err := q.check(screening, token); err != nil {
		return Entry{}, err
	}
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	epoch := pipe.Get(ctx, k.epoch)
	closed := pipe.Exists(ctx, k.closed)
	pre := pipe.ZScore(ctx, k.pre, token)
	preTotal := pipe.ZCard(ctx, k.pre)
	rank := pipe.ZRank(ctx, k.waiting, token)
	seq := pipe.ZScore(ctx, k.waiting, token)
	total := pipe.ZCard(ctx, k.waiting)
	active := pipe.ZScore(ctx, k.active, token)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Entry{}, fmt.Errorf("queue: status in %s: %w", screening, err)
	}
	e := Entry{Token: token, State: Unknown, Total: total.Val()}
	if epoch.Err() == nil {
		n, err := epoch.Int64()
		if err != nil {
			return Entry{}, fmt.Errorf("queue: status in %s: epoch: %w", screening, err)
		}
		e.Epoch = n
	}
	switch {
	case active.Err() == nil && int64(active.Val()) > q.now().UnixMilli():
		e.State, e.ExpiresAt = Admitted, time.UnixMilli(int64(active.Val()))
	case rank.Err() == nil:
		e.State, e.ZeroBasedRank, e.Seq = Waiting, rank.Val(), int64(seq.Val())
	case pre.Err() == nil:
		e.State, e.Total = Pre, preTotal.Val()
	case closed.Val() == 1:
		e.State = Closed
	}
	return e, nil
}

// Ranks returns the zero-based rank of each token (-1 for one not waiting) and the line's length, in one
// round trip: one ZRANK per token, so it is for checks and tools, never per tick (the hub computes ranks
// from Line).
func (q *Queue) Ranks(ctx context.Context, screening string, tokens []string) ([]int64, int64, error) {
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(tokens))
	for i, t := range tokens {
		cmds[i] = pipe.ZRank(ctx, k.waiting, t)
	}
	total := pipe.ZCard(ctx, k.waiting)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("queue: ranks in %s: %w", screening, err)
	}
	ranks := make([]int64, len(tokens))
	for i, c := range cmds {
		ranks[i] = -1
		if c.Err() == nil {
			ranks[i] = c.Val()
		}
	}
	return ranks, total.Val(), nil
}

// Counts returns the line's length and the number of admitted users holding a slot now.
func (q *Queue) Counts(ctx context.Context, screening string) (waiting, active int64, err error) {
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	w := pipe.ZCard(ctx, k.waiting)
	a := pipe.ZCount(ctx, k.active, "("+strconv.FormatInt(q.now().UnixMilli(), 10), "+inf")
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, fmt.Errorf("queue: counts in %s: %w", screening, err)
	}
	return w.Val(), a.Val(), nil
}

// Leave takes token out of the screening: out of the line, and its admission slot freed if it had one.
// It reports whether the token was anywhere; when it was, the admission loops running on q here are woken
// to refill a freed slot at once.
func (q *Queue) Leave(ctx context.Context, screening, token string) (bool, error) {
	if err := q.check(screening, token); err != nil {
		return false, err
	}
	k := q.keys(screening)
	res, err := leaveScript.Run(ctx, q.rdb, []string{k.waiting, k.active, k.changed, k.freed, k.left, k.leftNew, k.pre, k.gone}, token).Int64Slice()
	if err != nil {
		return false, fmt.Errorf("queue: leave %s: %w", screening, err)
	}
	left := res[0]+res[1] > 0
	if left {
		q.slotFreed(screening)
	}
	return left, nil
}

// Close marks the screening sold out: registration is refused from now on, the waiting line is dropped, and
// every instance is told (an EventSoldOut, numbered like the line's other events, so an instance that
// missed it finds out from the epoch and reads the line closed) so it can tell its sockets at once.
func (q *Queue) Close(ctx context.Context, screening string) error {
	k := q.keys(screening)
	res, err := closeScript.Run(ctx, q.rdb, []string{k.waiting, k.closed, k.pre, k.gone, k.conns, k.epoch}).Int64Slice()
	if err != nil {
		return fmt.Errorf("queue: close %s: %w", screening, err)
	}
	return q.publish(ctx, screening, Event{Kind: EventSoldOut, Screening: screening, TickAtMs: q.now().UnixMilli(), Epoch: res[1]})
}

// Closed reports whether the screening is sold out.
func (q *Queue) Closed(ctx context.Context, screening string) (bool, error) {
	n, err := q.rdb.Exists(ctx, q.keys(screening).closed).Result()
	if err != nil {
		return false, fmt.Errorf("queue: closed %s: %w", screening, err)
	}
	return n == 1, nil
}

func unixMilli(v any) (time.Time, error) {
	var ms float64
	switch x := v.(type) {
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return time.Time{}, err
		}
		ms = f
	case int64:
		ms = float64(x)
	default:
		return time.Time{}, fmt.Errorf("unexpected time %T %v", v, v)
	}
	return time.UnixMilli(int64(ms)), nil
}
