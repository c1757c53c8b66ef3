// Package queue owns the waiting line in Redis: registration (idempotent, first come first served), position,
// atomic admission, the active set, the per-screening admission lock, the scheduler that sets the pace, and
// the slot behind each pass admission hands out: checked and spent here, signed and verified in package
// pass. It is the one owner of the Redis keys: booking's seat locks and seat sets live under its keys too,
// and booking reaches them only through its methods (seats.go).
//
// Guarantees: a registered token is always in exactly one of waiting, active, or (after leave/expiry/close)
// gone by a documented step; an admission tick pops and activates in one Lua script, so nobody is popped and
// lost; at most batch_size are admitted per tick and never more than max_active at once. All keys of one
// screening share the hash tag {screening}, so every script runs on one Redis Cluster slot.
//
// Each file holds one part, and each Lua script (lua/) is loaded in the file that runs it:
//   - queue.go: the Queue, its keys (Key, ClosedKey), tokens and screening ids
//   - seats.go: booking's seats in Redis: a request's seat locks (SeatKeys, LockSeats, SeatLocksHeld,
//     UnlockSeats) and the sold and held sets (SeatSets, FillSeatSets, FixSeatSets, ChangeSeats)
//   - lease.go: a lease one instance at a time holds (RenewLease: booking's sweeper)
//   - boxoffice.go: what an order changes in its line: its order slot kept and freed (KeepOrderSlot,
//     FreeOrderSlot), all seats held (AllHeld), reopened (Reopen), seat changes told (PublishSeats)
//   - register.go: entering the line and counting a token's sockets (Enter, Register, Disconnected, Undo)
//   - status.go: reading where tokens stand (Status, Seqs, Counts)
//   - leave.go: a token taken out of the line (Leave)
//   - sale.go: the sale's state: opened, paused, resumed, closed (Open, Pause, Resume, Close, Closed)
//   - admission.go: one atomic admission at a tick or into freed slots (Admit, TickResult)
//   - lock.go: the per-screening admission lock, so each tick runs once across instances
//   - events.go: what instances tell each other over pub/sub (Event, Subscribe, Epoch)
//   - line.go: an instance's copy of a line, which computes ranks without Redis (Line, Queue.Line)
//   - restore.go: rebuilding a line Redis lost (Standing, Restore), and the numbering that tells a number
//     of the lost line from one handed out since (Numbering)
//   - spend.go: checking a pass's claims (pass.Claims) against its slot and spending it (CheckPass,
//     CheckPassLine, Finish)
//   - gate.go: the gate's direct admission of a visitor into a free slot while nobody waits (AdmitDirect)
//   - solutions.go: a proof of work spent once (SpendSolution, UnspendSolution)
//   - batch.go: calls that arrive together sent to Redis in one pipeline (Settle)
//   - scheduler.go: one admission loop per screening on sale, following the list (Scheduler, Run)
//   - loop.go: one screening's loop: open at the sale time, tick, refill when woken
//   - tick.go: one tick of the scheduler: lock, admit, tell, unlock, count
//   - wake.go: how a freed slot wakes the loops of the schedulers running on the queue
//   - settings.go: a screening's admission settings (Settings)
//   - figures.go: the operator's view of a line and of the instances (Figures, Instances)
//   - metrics.go: the scheduler's Prometheus metrics
//   - decoys.go: the infinite queue's decoy places, in no line (NewDecoy)
//   - reset.go: a sale's line emptied, as if no one had ever come (Reset)
//   - waitlist.go: a sold-out line kept as its waitlist: parties (SetParty), the offers' news
//     (TakeOfferNews) and figures (Waitlist), the tokens kept for an e-mail and those with a socket open
//     (Keep, Kept, Connected, Holds); the offer rounds are admit.lua's, an offer taken offertaken.lua's
//   - keys.go: the Ed25519 keys that sign passes (PassKey, ParsePassKey, GeneratePassKey)
//   - log.go: the admission log's records in Redis, on their way to the database (SetLog, LogRecords,
//     TrimLog); the scripts that change the line append them (docs/admission-log.md)
//   - logbacklog.go: the records still waiting in Redis for the log's writer (LogBacklog)
//   - beacon.go: a public randomness beacon's round named when a pre-queue's seed is drawn and mixed in at
//     its opening (SetBeacon)
package queue

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/ids"
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
	screeningRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	tokenRe     = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// ValidScreening reports whether id can name a screening's keys.
func ValidScreening(id string) bool { return screeningRe.MatchString(id) }

// ValidToken reports whether t has the form of a token this package hands out (128 random bits, hex).
func ValidToken(t string) bool { return tokenRe.MatchString(t) }

// NewToken returns a fresh random 128-bit token.
func NewToken() string { return ids.New() }

// Key names the key `name` of a screening under prefix: "<prefix>{<screening>}:<name>". The braces are the
// Redis Cluster hash tag, so every key of a screening lives in one slot, booking's seat locks and seat sets
// too (seats.go builds them with it).
func Key(prefix, screening, name string) string {
	return prefix + "{" + screening + "}:" + name
}

// ClosedKey is the key whose presence means the screening is sold out; booking's seat-lock script reads it
// so a request after the last seat is refused before any lock.
func ClosedKey(prefix, screening string) string { return Key(prefix, screening, "closed") }

// ReleasedKey counts the screening's releases of seats (orders cancelled or expired) and reopenings: an
// instance that remembers seats as sold forgets them when it reads a new count with a pass check.
func ReleasedKey(prefix, screening string) string { return Key(prefix, screening, "released") }

type keys struct {
	waiting, active, seq, closed, changed, freed, spent, lock, lastTick, events string
	head, left, leftNew, epoch                                                  string
	pre, opened, paused, gone, conns, stats, hold, restored, admitAt, numbering string
	allHeld, released, reopened, resumed                                        string
	log, pren, preinfo, placed, seed, pace, beacon                              string // the admission log's (log.go)
	wl, offerable, offers, party, wlHeld, wlNews, keep, avail                   string // the waitlist's (waitlist.go)
}

// Queue is the waiting line of every screening, in one Redis.
type Queue struct {
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time

	pubsubMu sync.Mutex
	pubsub   pubsubMode // how events travel: found out on first use

	calls  batcher[scriptCall] // registrations and count-offs on their way to Redis together (batch.go)
	checks batcher[passCheck]  // pass checks on their way to Redis together (spend.go)

	metrics *Metrics // where the count-offs' resends and losses are counted; nil: nowhere (SetMetrics)

	wakersMu sync.Mutex
	wakers   map[*Scheduler]struct{} // the schedulers whose Run runs on this queue: woken when a slot is freed (wake.go)

	logged bool          // the admission log is kept (SetLog, log.go)
	seeds  seedMemo      // the pre-queues' shuffle seeds, read a second ago at most (log.go)
	beacon *beaconSource // the randomness beacon mixed into the seeds (SetBeacon, beacon.go); nil: none
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

func (q *Queue) keys(screening string) keys {
	k := func(name string) string { return Key(q.prefix, screening, name) }
	return keys{
		waiting: k("waiting"), active: k("active"), seq: k("seq"), closed: ClosedKey(q.prefix, screening), changed: k("changed"), freed: k("freed"), spent: k("spent"),
		lock: k("lock"), lastTick: k("tick"), events: k("events"),
		head: k("head"), left: k("left"), leftNew: k("leftnew"), epoch: k("epoch"),
		pre: k("pre"), opened: k("opened"), paused: k("paused"), gone: k("gone"), conns: k("conns"), stats: k("stats"), hold: k("hold"), restored: k("restored"), numbering: k("numbering"),
		admitAt: k("admitat"), allHeld: k("allheld"), released: ReleasedKey(q.prefix, screening), reopened: k("reopened"), resumed: k("resumed"),
		log: k("log"), pren: k("pren"), preinfo: k("preinfo"), placed: k("placed"), seed: k("seed"), pace: k("pace"),
		beacon: k("beacon"),
		wl:     k("wl"), offerable: k("offerable"), offers: k("offers"), party: k("party"), wlHeld: k("wlheld"), wlNews: k("wlnews"), keep: k("keep"), avail: k("avail"),
	}
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

// Ping reports whether Redis answers.
func (q *Queue) Ping(ctx context.Context) error {
	if err := q.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("queue: ping: %w", err)
	}
	return nil
}
