package queue

import (
	"context"
	"fmt"
	"time"
)

// SkipReason says why a tick admitted nobody (the seed's four reasons).
type SkipReason string

// The reasons a tick admits nobody.
const (
	// NoValidScreening: the screening is closed (sold out) or no longer on sale.
	NoValidScreening SkipReason = "NO_VALID_SCREENING"
	// LockNotAcquired: another instance holds this screening's lock or has already run this tick.
	LockNotAcquired SkipReason = "LOCK_NOT_ACQUIRED"
	// ActiveCapacityReached: max_active users already hold a slot.
	ActiveCapacityReached SkipReason = "ACTIVE_CAPACITY_REACHED"
	// QueueEmpty: nobody is waiting.
	QueueEmpty SkipReason = "QUEUE_EMPTY"
	// NothingFreed: a refill found no freed slot to fill (another refill or a tick took it), or admission
	// is paused.
	NothingFreed SkipReason = "NOTHING_FREED"
	// Paused: the operator paused the screening's admission.
	Paused SkipReason = "PAUSED"
	// Rebuilding: Redis lost the line and the instances are putting their sockets back (Queue.Restore).
	Rebuilding SkipReason = "REBUILDING"
)

// RebuildHold is how long admission waits after the first instance rebuilds a line Redis lost, so the other
// instances' sockets are back before anyone is admitted: each instance finds the loss within a couple of
// seconds (its subscription and its line read retry every second). Short enough that admission resumes
// within 5 s of Redis's return (docs/reliability.md).
const RebuildHold = 3 * time.Second

// TickResult is what one admission tick did.
type TickResult struct {
	Screening string
	TickAt    time.Time
	// Skip is empty when somebody was admitted.
	Skip SkipReason
	// Admitted are the tokens activated, earliest first.
	Admitted []string
	// ExpiresAt is when the admitted tokens' slots (and passes) lapse.
	ExpiresAt time.Time
	// Active and Waiting are the counts right after the tick (not set on a lock miss).
	Active, Waiting int64
	// Moved is true when the line changed since the last tick (admissions, joins or leaves): the waiting
	// must be told their new rank and total, so the event below must be published.
	Moved bool
	// Abandoned counts the waiting tokens this tick dropped because their sockets were gone past the grace.
	Abandoned int64
	// Epoch, Head, LastSeq and Left are the line after the admission, when Moved (see Line).
	Epoch, Head, LastSeq int64
	Left                 []int64
}

// Event is what every instance is told of the admission.
func (r TickResult) Event() Event {
	ev := Event{
		Kind: EventTick, Screening: r.Screening, TickAtMs: r.TickAt.UnixMilli(), Admitted: r.Admitted, Total: r.Waiting,
		Epoch: r.Epoch, Head: r.Head, LastSeq: r.LastSeq, Left: r.Left, Paused: r.Skip == Paused,
	}
	if len(r.Admitted) > 0 {
		ev.ExpiresAtMs = r.ExpiresAt.UnixMilli()
	}
	return ev
}

// Admit runs one admission tick for the screening at now, atomically: expired slots are dropped, and
// min(batch_size, max_active − active) of the earliest waiting tokens are popped and activated with expiry
// now + active_ttl. It takes no lock; the Scheduler calls it under one.
func (q *Queue) Admit(ctx context.Context, screening string, now time.Time, s Settings) (TickResult, error) {
	return q.admit(ctx, screening, now, s, "tick")
}

// Refill admits as many as slots were freed (by reservations and leaves) since the last admission, at most
// batch_size and never past max_active: the finishing are replaced at once, without waiting for a tick.
// It needs no lock: the script is atomic and the freed count bounds it, however many instances call it.
func (q *Queue) Refill(ctx context.Context, screening string, now time.Time, s Settings) (TickResult, error) {
	return q.admit(ctx, screening, now, s, "refill")
}

func (q *Queue) admit(ctx context.Context, screening string, now time.Time, s Settings, mode string) (TickResult, error) {
	k := q.keys(screening)
	res, err := admitScript.Run(ctx, q.rdb,
		[]string{k.waiting, k.active, k.spent, k.closed, k.changed, k.freed, k.head, k.left, k.leftNew, k.epoch, k.seq, k.opened, k.paused, k.gone, k.stats, k.hold, k.admitAt},
		now.UnixMilli(), s.BatchSize, s.MaxActive, ExpiryOf(now, s.ActiveTTL).UnixMilli(), mode, s.goneCutoff(now)).Slice()
	if err != nil {
		return TickResult{}, fmt.Errorf("queue: admit %s: %w", screening, err)
	}
	r := TickResult{
		Screening: screening, TickAt: now, Skip: SkipReason(res[0].(string)),
		Active: res[2].(int64), Waiting: res[3].(int64), Moved: res[4].(int64) == 1,
	}
	if len(res) > 5 {
		r.Abandoned = res[5].(int64)
	}
	if !r.Moved {
		return r, nil
	}
	r.Epoch, r.Head, r.LastSeq = res[6].(int64), res[7].(int64), res[8].(int64)
	nLeft := int(res[9].(int64))
	r.Left = make([]int64, nLeft)
	for i := range nLeft {
		r.Left[i] = res[10+i].(int64)
	}
	if r.Skip != "" {
		return r, nil
	}
	r.ExpiresAt = time.UnixMilli(res[1].(int64))
	tokens := res[10+nLeft:]
	r.Admitted = make([]string, 0, len(tokens))
	for _, t := range tokens {
		r.Admitted = append(r.Admitted, t.(string))
	}
	return r, nil
}

// ExpiryOf is when an admission at now lapses: now + ttl, to the millisecond (the active set's unit).
func ExpiryOf(now time.Time, ttl time.Duration) time.Time {
	return time.UnixMilli(now.Add(ttl).UnixMilli())
}

// TryLock takes the screening's admission lock for tick number tick (the start of its interval, Unix ms). It fails when another
// owner holds the lock, or when any owner already took this tick.
func (q *Queue) TryLock(ctx context.Context, screening, owner string, tick int64, ttl time.Duration) (bool, error) {
	k := q.keys(screening)
	n, err := lockScript.Run(ctx, q.rdb, []string{k.lock, k.lastTick}, owner, ttl.Milliseconds(), tick).Int()
	if err != nil {
		return false, fmt.Errorf("queue: lock %s: %w", screening, err)
	}
	return n == 1, nil
}

// Unlock releases the screening's admission lock if owner still holds it.
func (q *Queue) Unlock(ctx context.Context, screening, owner string) (bool, error) {
	n, err := unlockScript.Run(ctx, q.rdb, []string{q.keys(screening).lock}, owner).Int()
	if err != nil {
		return false, fmt.Errorf("queue: unlock %s: %w", screening, err)
	}
	return n == 1, nil
}

// EventKind says what an Event reports.
type EventKind string

// The events instances tell each other.
const (
	// EventTick: an admission tick found the line changed (it admitted someone, or people joined or left):
	// the admitted get their pass, the waiting their rank and the total.
	EventTick EventKind = "tick"
	// EventSoldOut: the screening closed.
	EventSoldOut EventKind = "sold_out"
	// EventOpened: the line opened and the pre-queue took its shuffled sequence numbers. It carries the
	// whole line (Left is every number that left above the head), like Queue.Line.
	EventOpened EventKind = "opened"
	// EventRebuilt: an instance rebuilt the line after Redis lost it (Queue.Restore). Like EventOpened it
	// carries the whole line.
	EventRebuilt EventKind = "rebuilt"
	// EventPaused and EventResumed: the operator paused or resumed admission.
	EventPaused  EventKind = "paused"
	EventResumed EventKind = "resumed"
)

// Event travels over Redis pub/sub from the instance that changed a screening to every instance, which
// tells its own sockets.
type Event struct {
	Kind      EventKind `json:"kind"`
	Screening string    `json:"screening"`
	// TickAtMs is the tick's time, Unix ms.
	TickAtMs int64 `json:"tick_at"`
	// Admitted and ExpiresAtMs are set on EventTick.
	Admitted    []string `json:"admitted,omitempty"`
	ExpiresAtMs int64    `json:"expires_at,omitempty"`
	// Total is the line's length right after the tick.
	Total int64 `json:"total"`
	// Epoch, Head, LastSeq and Left move every instance's Line (set on EventTick and EventOpened).
	Epoch   int64   `json:"epoch,omitempty"`
	Head    int64   `json:"head,omitempty"`
	LastSeq int64   `json:"last_seq,omitempty"`
	Left    []int64 `json:"left,omitempty"`
	// Paused is set on an EventTick that moved the line while admission is paused.
	Paused bool `json:"paused,omitempty"`
}

// Opening is what Open did.
type Opening struct {
	// Opened is false when the line was already open (another instance opened it) or the screening closed.
	Opened bool
	// Shuffled is how many pre-queue tokens took a place; Abandoned how many were dropped as gone.
	Shuffled, Abandoned int64
	Line                Line
}

// Open opens the screening's line at its sale time, once across instances: the pre-queue takes its places
// in a uniformly shuffled order (see register.lua and open.lua), and every instance is told (EventOpened),
// so the sockets that waited for the opening learn their rank. Later arrivals queue first come, first served.
func (q *Queue) Open(ctx context.Context, screening string, now time.Time, s Settings) (Opening, error) {
	k := q.keys(screening)
	res, err := openScript.Run(ctx, q.rdb, []string{k.waiting, k.seq, k.epoch, k.pre, k.opened, k.gone, k.head, k.left, k.closed, k.stats},
		now.UnixMilli(), s.goneCutoff(now)).Int64Slice()
	if err != nil {
		return Opening{}, fmt.Errorf("queue: open %s: %w", screening, err)
	}
	o := Opening{Opened: res[0] == 1, Shuffled: res[1], Abandoned: res[2]}
	if !o.Opened {
		return o, nil
	}
	o.Line = Line{Epoch: res[3], Head: res[4], LastSeq: res[5], Total: res[6], Left: res[7:]}
	ev := Event{Kind: EventOpened, Screening: screening, TickAtMs: now.UnixMilli(), Total: o.Line.Total,
		Epoch: o.Line.Epoch, Head: o.Line.Head, LastSeq: o.Line.LastSeq, Left: o.Line.Left}
	if err := q.publish(ctx, screening, ev); err != nil {
		// The line is open; instances learn it from the next tick's epoch gap (they read the line whole).
		return o, fmt.Errorf("queue: opened %s but could not tell the instances: %w", screening, err)
	}
	return o, nil
}

// Pause stops the screening's admission (ticks and refills skip with Paused) until Resume, on every
// instance, and tells every instance's sockets.
func (q *Queue) Pause(ctx context.Context, screening string) error {
	if err := q.rdb.Set(ctx, q.keys(screening).paused, "1", 0).Err(); err != nil {
		return fmt.Errorf("queue: pause %s: %w", screening, err)
	}
	return q.publish(ctx, screening, Event{Kind: EventPaused, Screening: screening, TickAtMs: q.now().UnixMilli()})
}

// Resume lets a paused screening's admission go on at the next tick.
func (q *Queue) Resume(ctx context.Context, screening string) error {
	if err := q.rdb.Del(ctx, q.keys(screening).paused).Err(); err != nil {
		return fmt.Errorf("queue: resume %s: %w", screening, err)
	}
	return q.publish(ctx, screening, Event{Kind: EventResumed, Screening: screening, TickAtMs: q.now().UnixMilli()})
}

// Seqs returns each token's sequence number in the screening's line (0 for a token not in it), in one
// round trip per thousand tokens: for an instance placing the sockets of its pre-queue once the line opens.
func (q *Queue) Seqs(ctx context.Context, screening string, tokens []string) ([]int64, error) {
	const chunk = 1000
	k := q.keys(screening)
	out := make([]int64, len(tokens))
	for start := 0; start < len(tokens); start += chunk {
		end := min(start+chunk, len(tokens))
		scores, err := q.rdb.ZMScore(ctx, k.waiting, tokens[start:end]...).Result()
		if err != nil {
			return nil, fmt.Errorf("queue: places in %s: %w", screening, err)
		}
		for i, sc := range scores {
			out[start+i] = int64(sc)
		}
	}
	return out, nil
}

// Standing is what an instance knows of one of its sockets' tokens: its sequence number while waiting, or
// the expiry of its admission.
type Standing struct {
	Token     string
	Seq       int64
	ExpiresAt time.Time
}

// Ping reports whether Redis answers.
func (q *Queue) Ping(ctx context.Context) error {
	if err := q.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("queue: ping: %w", err)
	}
	return nil
}

// Restore rebuilds the screening's line after Redis lost it (restore.lua): the waiting tokens of standings
// take back their numbers, in their order, and the admitted their slots until their expiry. It tells every
// instance (EventRebuilt, with the whole line) and returns the line; restored counts the tokens put back
// (-1 when the screening is closed).
func (q *Queue) Restore(ctx context.Context, screening string, standings []Standing) (Line, int64, error) {
	k := q.keys(screening)
	args := make([]any, 0, 2+3*len(standings))
	args = append(args, q.now().UnixMilli(), RebuildHold.Milliseconds())
	for _, s := range standings {
		exp := int64(0)
		if !s.ExpiresAt.IsZero() {
			exp = s.ExpiresAt.UnixMilli()
		}
		args = append(args, s.Token, s.Seq, exp)
	}
	res, err := restoreScript.Run(ctx, q.rdb, []string{k.waiting, k.active, k.seq, k.opened, k.epoch, k.head, k.left, k.leftNew, k.closed, k.hold, k.restored}, args...).Int64Slice()
	if err != nil {
		return Line{}, 0, fmt.Errorf("queue: restore %s: %w", screening, err)
	}
	if res[0] < 0 {
		return Line{}, -1, nil
	}
	l := Line{Epoch: res[1], Head: res[2], LastSeq: res[3], Total: res[4], Left: res[5:]}
	ev := Event{Kind: EventRebuilt, Screening: screening, TickAtMs: q.now().UnixMilli(), Total: l.Total,
		Epoch: l.Epoch, Head: l.Head, LastSeq: l.LastSeq, Left: l.Left}
	if err := q.publish(ctx, screening, ev); err != nil {
		return l, res[0], fmt.Errorf("queue: rebuilt %s but could not tell the instances: %w", screening, err)
	}
	return l, res[0], nil
}
