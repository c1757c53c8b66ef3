// Admission: one atomic admission of the earliest waiting, at a tick (Admit) or into the slots freed since
// the last (refill); what it did (TickResult) and why it admitted nobody (SkipReason).

package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/admit.lua
	admitLua string

	admitScript = redis.NewScript(admitLua)
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
	// AllHeld: every seat is held or sold, some only held: nobody is admitted until seats come back or
	// the sale sells out.
	AllHeld SkipReason = "ALL_HELD"
	// NoSeatsBack: the line is a waitlist and no seat came back to offer (or none fits the parties
	// waiting, the first of which the seats wait for one round: docs/protocol.md 5.4).
	NoSeatsBack SkipReason = "NO_SEATS_BACK"
)

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
	// Offers is set when the admission was a waitlist's offer round: the seats offered to each admitted
	// token, in Admitted's order (ExpiresAt is then the offers' expiry).
	Offers []int
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
	ev.Offers = r.Offers
	return ev
}

// Admit runs one admission tick for the screening at now, atomically: expired slots are dropped, and
// min(batch_size, max_active − active) of the earliest waiting tokens are popped and activated with expiry
// now + active_ttl. It takes no lock; the Scheduler calls it under one.
func (q *Queue) Admit(ctx context.Context, screening string, now time.Time, s Settings) (TickResult, error) {
	return q.admit(ctx, screening, now, s, "tick")
}

// refill admits as many as slots were freed (by reservations and leaves) since the last admission, at most
// batch_size and never past max_active: the finishing are replaced at once, without waiting for a tick.
// It needs no lock: the script is atomic and the freed count bounds it, however many instances call it.
func (q *Queue) refill(ctx context.Context, screening string, now time.Time, s Settings) (TickResult, error) {
	return q.admit(ctx, screening, now, s, "refill")
}

func (q *Queue) admit(ctx context.Context, screening string, now time.Time, s Settings, mode string) (TickResult, error) {
	k := q.keys(screening)
	res, err := admitScript.Run(ctx, q.rdb,
		[]string{k.waiting, k.active, k.spent, k.closed, k.changed, k.freed, k.head, k.left, k.leftNew, k.epoch, k.seq, k.opened, k.paused, k.gone, k.stats, k.hold, k.admitAt, k.allHeld,
			k.log, k.pace, k.wl, k.offerable, k.offers, k.party, k.wlHeld, k.wlNews, k.keep, k.avail},
		now.UnixMilli(), s.BatchSize, s.MaxActive, expiryOf(now, s.ActiveTTL).UnixMilli(), mode, s.goneCutoff(now),
		q.logFlag(), s.Interval.Milliseconds(), expiryOf(now, s.offerTTL()).UnixMilli(), offerScan).Slice()
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
	for i, t := range tokens {
		if t == "offers" {
			for _, n := range tokens[i+1:] {
				r.Offers = append(r.Offers, int(n.(int64)))
			}
			break
		}
		r.Admitted = append(r.Admitted, t.(string))
	}
	return r, nil
}

// expiryOf is when an admission at now lapses: now + ttl, to the millisecond (the active set's unit).
func expiryOf(now time.Time, ttl time.Duration) time.Time {
	return time.UnixMilli(now.Add(ttl).UnixMilli())
}
