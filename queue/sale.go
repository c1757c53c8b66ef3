// The sale's state in Redis, which every instance follows: the line opened at the sale time (Open),
// admission paused and resumed by the operator (Pause, Resume), and the line closed when sold out (Close,
// Closed).

package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/open.lua
	openLua string
	//go:embed lua/close.lua
	closeLua string

	openScript  = redis.NewScript(openLua)
	closeScript = redis.NewScript(closeLua)
)

// Opening is what Open did.
type Opening struct {
	// Opened is false when the line was already open (another instance opened it) or the screening closed.
	Opened bool
	// Shuffled is how many pre-queue tokens took a place; Abandoned how many were dropped as gone.
	Shuffled, Abandoned int64
	Line                Line
	// Round is the beacon round the pre-queue's commitment named (0: none); Mixed says it was fetched and
	// mixed in, not left out because the beacon could not be reached in time.
	Round int64
	Mixed bool
}

// Open opens the screening's line at its sale time, once across instances: the pre-queue takes its places
// in a uniformly shuffled order (see register.lua and open.lua), and every instance is told (EventOpened),
// so the sockets that waited for the opening learn their rank. Later arrivals queue first come, first served.
//
// When the pre-queue's commitment named a beacon round (beacon.go), Open first waits for that round (the
// line stays unopened meanwhile, arrivals joining the pre-queue as before the sale time), at most the
// beacon's patience after it is due; then it opens, with the round mixed in or, not fetched, without.
func (q *Queue) Open(ctx context.Context, screening string, now time.Time, s Settings) (Opening, error) {
	k := q.keys(screening)
	var mix *mixing
	if q.logged {
		var err error
		if mix, err = q.mixFor(ctx, screening); err != nil {
			return Opening{}, err
		}
		if mix != nil && q.now().After(now) {
			now = q.now() // it waited for the round
		}
	}
	var res []int64
	for try := 1; ; try++ {
		args := []any{now.UnixMilli(), s.goneCutoff(now), q.logFlag(), 0, mix.revealFields()}
		if mix != nil && mix.fetched != nil {
			order, err := q.mixedOrder(ctx, screening, mix)
			if err != nil {
				return Opening{}, err
			}
			args[3] = mix.dueMs
			args = append(args, order...)
			if q.beacon != nil && q.beacon.beforeOpen != nil {
				q.beacon.beforeOpen(try)
			}
		}
		var err error
		res, err = openScript.Run(ctx, q.rdb, []string{k.waiting, k.seq, k.epoch, k.pre, k.opened, k.gone, k.head, k.left, k.closed, k.stats,
			k.log, k.preinfo, k.placed, k.seed}, args...).Int64Slice()
		if err != nil {
			return Opening{}, fmt.Errorf("queue: open %s: %w", screening, err)
		}
		if res[0] != -1 {
			break
		}
		if try == openTries {
			return Opening{}, fmt.Errorf("queue: open %s: the pre-queue changed under %d readings in a row", screening, openTries)
		}
	}
	o := Opening{Opened: res[0] == 1, Shuffled: res[1], Abandoned: res[2]}
	if mix != nil {
		o.Round, o.Mixed = mix.round, mix.fetched != nil
	}
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
	k := q.keys(screening)
	if err := pauseScript.Run(ctx, q.rdb, []string{k.paused, k.log}, q.now().UnixMilli(), q.logFlag()).Err(); err != nil {
		return fmt.Errorf("queue: pause %s: %w", screening, err)
	}
	return q.publish(ctx, screening, Event{Kind: EventPaused, Screening: screening, TickAtMs: q.now().UnixMilli()})
}

// Resume lets a paused screening's admission go on at the next tick. The line is marked resumed for a while
// (reopenedMark), so a scheduler acting on a list of sales read before the resume does not pause it again.
func (q *Queue) Resume(ctx context.Context, screening string) error {
	k := q.keys(screening)
	if err := resumeScript.Run(ctx, q.rdb, []string{k.paused, k.log, k.resumed}, q.now().UnixMilli(), q.logFlag(), reopenedMark.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("queue: resume %s: %w", screening, err)
	}
	return q.publish(ctx, screening, Event{Kind: EventResumed, Screening: screening, TickAtMs: q.now().UnixMilli()})
}

// Close marks the screening sold out: registration is refused from now on, the waiting line is dropped, and
// every instance is told (an EventSoldOut, numbered like the line's other events, so an instance that
// missed it finds out from the epoch and reads the line closed) so it can tell its sockets at once.
func (q *Queue) Close(ctx context.Context, screening string) error {
	_, err := q.SellOut(ctx, screening, false)
	return err
}

// SellOut is Close, returning the closing's epoch: the same number however many times the line is closed
// until it reopens, so it names this closing (a webhook's id). With waitlist the line is kept as the
// screening's waitlist (waitlist.go): its sockets stay, told so, and newcomers join its end.
func (q *Queue) SellOut(ctx context.Context, screening string, waitlist bool) (int64, error) {
	return q.close(ctx, screening, ReasonSoldOut, waitlist)
}

// close closes the line for reason (ReasonSoldOut or ReasonClosed) and returns the closing's epoch; a line
// the operator closed stays closed for that reason.
func (q *Queue) close(ctx context.Context, screening, reason string, waitlist bool) (int64, error) {
	k := q.keys(screening)
	keep := "0"
	if waitlist {
		keep = "1"
	}
	res, err := closeScript.Run(ctx, q.rdb, []string{k.waiting, k.closed, k.pre, k.gone, k.conns, k.epoch, k.log, k.preinfo, k.wl, k.offerable, k.allHeld, k.avail},
		reason, q.now().UnixMilli(), q.logFlag(), keep).Slice()
	if err != nil {
		return 0, fmt.Errorf("queue: close %s: %w", screening, err)
	}
	epoch, _ := res[1].(int64)
	if why, ok := res[2].(string); ok && reason != ReasonReset {
		reason = why // the reason the line has: an operator's close is not undone by a sell-out after it
	}
	kept, _ := res[3].(int64)
	ev := Event{Kind: EventSoldOut, Screening: screening, TickAtMs: q.now().UnixMilli(), Epoch: epoch, Reason: reason, Waitlist: kept == 1}
	return epoch, q.publish(ctx, screening, ev)
}

// Closed reports whether the screening is sold out.
func (q *Queue) Closed(ctx context.Context, screening string) (bool, error) {
	n, err := q.rdb.Exists(ctx, q.keys(screening).closed).Result()
	if err != nil {
		return false, fmt.Errorf("queue: closed %s: %w", screening, err)
	}
	return n == 1, nil
}

// pausedOrResumed reports whether the screening's line is paused, or was resumed within reopenedMark.
func (q *Queue) pausedOrResumed(ctx context.Context, screening string) (bool, error) {
	k := q.keys(screening)
	n, err := q.rdb.Exists(ctx, k.paused, k.resumed).Result()
	if err != nil {
		return false, fmt.Errorf("queue: paused %s: %w", screening, err)
	}
	return n > 0, nil
}
