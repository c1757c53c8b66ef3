// What the box office changes in a screening's line: a held order keeps its holder's slot, the order slot,
// until the hold lapses (KeepOrderSlot) and frees it when it ends (FreeOrderSlot); a sale whose seats are
// all held waits (AllHeld) and one that got seats back opens again (Reopen); seat changes and the closing's
// reason reach every instance.

package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/pass"
)

var (
	//go:embed lua/keepslot.lua
	keepSlotLua string
	//go:embed lua/freeslot.lua
	freeSlotLua string
	//go:embed lua/reopen.lua
	reopenLua string

	keepSlotScript = redis.NewScript(offerTakenLua + keepSlotLua)
	freeSlotScript = redis.NewScript(freeSlotLua)
	reopenScript   = redis.NewScript(reopenLua)
)

// reopenedMark is how long a reopened line is kept from keepClosed: longer than two of the scheduler's
// refreshes, so a list of sales read before the reopening is never acted on after it.
const reopenedMark = 5 * refreshEvery

// KeepOrderSlot records that the pass made a held order: it is spent, and its slot (the order slot) stays
// taken until the hold's expiry, not the admission's (a buyer paying is not replaced by the next in line).
// seats is how many seats the order holds: a waitlist's offer is taken, and the seats it offered beyond
// them go back to the next offer round.
func (q *Queue) KeepOrderSlot(ctx context.Context, c pass.Claims, until time.Time, seats int) error {
	k := q.keys(c.Screening)
	err := keepSlotScript.Run(ctx, q.rdb, []string{k.active, k.spent, k.offers, k.offerable, k.wlNews, k.stats, k.avail},
		c.Token, c.ExpiresAt.UnixMilli(), c.ID, until.UnixMilli(), seats).Err()
	if err != nil {
		return fmt.Errorf("queue: hold %s: %w", c.Screening, err)
	}
	return nil
}

// FreeOrderSlot frees the slot token kept for a held order that lasted until until (KeepOrderSlot), now that
// the order is confirmed, cancelled or expired, and wakes the admission loops here to refill it.
func (q *Queue) FreeOrderSlot(ctx context.Context, screening, token string, until time.Time) error {
	k := q.keys(screening)
	n, err := freeSlotScript.Run(ctx, q.rdb, []string{k.active, k.freed}, token, until.UnixMilli()).Int()
	if err != nil {
		return fmt.Errorf("queue: release %s: %w", screening, err)
	}
	if n == 1 {
		q.slotFreed(screening)
	}
	return nil
}

// CloseSale closes the screening's line for good, as the operator's closing: like Close, but the sockets
// are told it closed, not that it sold out, and no released seat reopens it.
func (q *Queue) CloseSale(ctx context.Context, screening string) error {
	_, err := q.close(ctx, screening, ReasonClosed, false)
	return err
}

// AllHeld records that every seat of the screening is held or sold and some only held: admission waits
// (admit.lua skips with ALL_HELD) and the waiting sockets of every instance are told, while the line stays
// open for newcomers.
//
// With waitlist the line becomes the screening's waitlist from now on (waitlist.go): what comes back is
// offered to the waiting in their order.
func (q *Queue) AllHeld(ctx context.Context, screening string, waitlist bool) error {
	k := q.keys(screening)
	pipe := q.rdb.TxPipeline()
	pipe.Set(ctx, k.allHeld, "1", 0)
	if waitlist {
		pipe.Set(ctx, k.wl, "1", 0)
		pipe.Set(ctx, k.offerable, "0", 0) // no seat is available: none is left to offer
		pipe.Set(ctx, k.avail, "0", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("queue: all held %s: %w", screening, err)
	}
	return q.publish(ctx, screening, Event{Kind: EventAllHeld, Screening: screening, TickAtMs: q.now().UnixMilli()})
}

// Reopen tells the screening's line that seats came back: a line whose seats were all held admits again,
// and one closed by its last sale opens again for newcomers when mayReopen (the operator did not close the
// sale). Either way the instances forget the seats they remembered sold (the released count moves). Every
// instance is told (EventReopened, numbered: they read the line anew) when the line changed; the reopening's
// epoch is returned then (0 when the line was open), which names it (a webhook's id).
//
// seats is how many seats came back: a waitlist offers them (admit.lua), never more than available (the
// seats available now, as the database counts them; -1: not known) less those its offers out promise.
func (q *Queue) Reopen(ctx context.Context, screening string, mayReopen bool, seats, available int) (int64, error) {
	k := q.keys(screening)
	flag := "0"
	if mayReopen {
		flag = "1"
	}
	res, err := reopenScript.Run(ctx, q.rdb, []string{k.closed, k.allHeld, k.epoch, k.released, k.reopened, k.log, k.wl, k.offerable, k.offers, k.avail}, flag,
		reopenedMark.Milliseconds(), q.now().UnixMilli(), q.logFlag(), seats, available).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("queue: reopen %s: %w", screening, err)
	}
	if res[0] == 0 {
		if res[2] == 1 {
			q.slotFreed(screening) // seats to offer: the loops here run an offer round at once
		}
		return 0, nil
	}
	// Published before the loops are woken: the admission they run into the freed slot is published after
	// it, so every waiting socket hears "reopened" before one of them may be admitted (the admitted are not
	// told; a tick that came first took that one's "reopened" away).
	ev := Event{Kind: EventReopened, Screening: screening, TickAtMs: q.now().UnixMilli(), Epoch: res[1]}
	err = q.publish(ctx, screening, ev)
	q.slotFreed(screening) // the loops here admit at once, not at the next tick
	q.refreshSchedulers()  // and a sale whose loop ended with its sell-out gets it back now
	return res[1], err
}

// PublishSeats tells every instance that seats of the screening changed state, so the admitted sockets'
// seat maps follow.
func (q *Queue) PublishSeats(ctx context.Context, screening string, seats []SeatChange) error {
	return q.publish(ctx, screening, Event{Kind: EventSeats, Screening: screening, TickAtMs: q.now().UnixMilli(), Seats: seats})
}

// reopenedLately reports whether the screening's line reopened within reopenedMark (false when Redis
// cannot say).
func (q *Queue) reopenedLately(ctx context.Context, screening string) bool {
	n, err := q.rdb.Exists(ctx, q.keys(screening).reopened).Result()
	return err == nil && n == 1
}
