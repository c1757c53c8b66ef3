// An order's transitions: confirmed when its buyer paid, cancelled by its buyer (held) or the operator (held
// or confirmed), expired when its hold lapsed. Each is one transaction that moves the order's status only
// from the statuses it may leave (a compare-and-set on the row, so two instances never both make it),
// releases its seats with a new fence on their rows when it ends the order, and writes its webhook (that SQL
// is the store's: store_orders.go); then Redis, the memo and every instance's sockets follow.

package booking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Who cancelled an order.
const (
	ByBuyer = "buyer"
	ByAdmin = "admin"
)

// kind is what a transition does to an order; its String is the metrics' word (a held order's own first
// transition, its hold, is counted by the reservation that makes it).
type kind uint8

const (
	kindConfirm kind = iota // its buyer paid: the order keeps its seats, sold
	kindCancel              // its buyer or the operator gave it up: its seats go back to the sale
	kindExpire              // its hold lapsed: its seats go back to the sale
)

func (k kind) String() string { return [...]string{"confirm", "cancel", "expire"}[k] }

// holdGuard is what a transition asks of the order's hold at the moment it moves (compared in SQL to the
// time the transition read).
type holdGuard uint8

const (
	holdAny     holdGuard = iota // whatever its hold: a cancellation
	holdRunning                  // the hold has not lapsed: a confirmation
	holdLapsed                   // the hold has lapsed: an expiry
)

// transition is one move of an order, as data: its kind; the statuses it may leave (from) and the one it
// makes (to); what it asks of the hold; release, that it ends the order (ended_at and cancelled_by written,
// the seats given back with a new fence, the line reopened) where a confirmation writes confirmed_at and may
// sell the line out; and by, who cancelled. Every transition writes its webhook, order.<to>, in its
// transaction (when webhooks are on); what follows its commit (afterMove) frees the holder's slot of a held
// order whatever the transition.
type transition struct {
	kind    kind
	from    []string
	to      string
	hold    holdGuard
	release bool
	by      string
}

var (
	confirmOrder     = transition{kind: kindConfirm, from: []string{StatusHeld}, to: StatusConfirmed, hold: holdRunning}
	expireOrder      = transition{kind: kindExpire, from: []string{StatusHeld}, to: StatusExpired, hold: holdLapsed, release: true}
	buyerCancelOrder = transition{kind: kindCancel, from: []string{StatusHeld}, to: StatusCancelled, release: true, by: ByBuyer}
	adminCancelOrder = transition{kind: kindCancel, from: []string{StatusHeld, StatusConfirmed}, to: StatusCancelled, release: true, by: ByAdmin}
)

// expiresLapsedFirst reports whether t, finding a held order whose hold lapsed, expires it first and answers
// ErrHoldExpired: every transition but the expiry itself.
func (t transition) expiresLapsedFirst() bool { return t.hold != holdLapsed }

// Confirm confirms the held order with code, its buyer having paid: the order (confirming a confirmed order
// returns it as it is), ErrHoldExpired once its hold lapsed (it is expired then, if the sweeper has not yet),
// ErrOrderCancelled.
func (b *Booking) Confirm(ctx context.Context, code string) (Order, error) {
	o, err := b.move(ctx, code, confirmOrder)
	if errors.Is(err, ErrOrderConfirmed) {
		return b.store.Order(ctx, code)
	}
	return o, err
}

// Cancel cancels the order with code for by: a buyer cancels a held order (ErrOrderConfirmed for a
// confirmed one), the operator a held or confirmed one; ErrOrderCancelled, ErrHoldExpired when it ended.
func (b *Booking) Cancel(ctx context.Context, code, by string) (Order, error) {
	t := buyerCancelOrder
	if by == ByAdmin {
		t = adminCancelOrder
	}
	return b.move(ctx, code, t)
}

// moveAttempts bounds the reads of one move: an order that another instance moved between this one's read
// and its write is read again and answered by what it became (refused, or moved from there), and an order
// moves at most twice (held, confirmed, cancelled), so a third read finds it where no transition leaves.
// Past the bound the move fails with errMoved instead of trying for ever.
const moveAttempts = 3

// move makes transition t of the order with code, or says why it cannot: a held order whose hold lapsed is
// expired on the way (ErrHoldExpired).
func (b *Booking) move(ctx context.Context, code string, t transition) (Order, error) {
	if !ValidOrderCode(code) {
		return Order{}, fmt.Errorf("booking: order: %w", ErrBadOrderCode)
	}
	// One database slot for the read, the write and the count after it (pool.go), taken once.
	ctx, endSession, err := b.store.session(ctx)
	if err != nil {
		return Order{}, err
	}
	defer endSession()
	for attempt := 1; ; attempt++ {
		o, err := b.store.Order(ctx, code)
		if err != nil {
			return Order{}, err
		}
		now := b.store.now().UTC().Truncate(time.Microsecond) // as the database keeps it
		if o.Status == StatusHeld && o.HoldExpiresAt != nil && !o.HoldExpiresAt.After(now) && t.expiresLapsedFirst() {
			// Expired on the way; what follows its commit may have failed (the reconciler catches the seats up),
			// but the answer is the same: the hold is over.
			if _, err := b.move(ctx, code, expireOrder); err != nil && !errors.Is(err, ErrHoldExpired) && !errors.As(err, new(*AfterCommitError)) {
				return Order{}, err
			}
			b.metrics.transition(t.kind.String(), ErrHoldExpired)
			return Order{}, fmt.Errorf("booking: %s %s: %w", t.kind, code, ErrHoldExpired)
		}
		if !slices.Contains(t.from, o.Status) {
			err := refusal(t, o.Status, code)
			b.metrics.transition(t.kind.String(), err)
			return Order{}, err
		}
		cat, err := b.catalog(ctx, o.Screening)
		if err != nil {
			return Order{}, err
		}
		done, err := b.store.moveOrder(ctx, o, t, now, b.settings.Webhooks, len(cat.seats))
		if errors.Is(err, errMoved) && attempt < moveAttempts {
			continue // another made a transition first: say what it is now
		}
		b.metrics.transition(t.kind.String(), err)
		if err != nil {
			return Order{}, err
		}
		return done, b.afterMove(ctx, o, done, t)
	}
}

// refusal is why transition t cannot leave status.
func refusal(t transition, status, code string) error {
	switch status {
	case StatusCancelled:
		return fmt.Errorf("booking: %s %s: %w", t.kind, code, ErrOrderCancelled)
	case StatusExpired:
		return fmt.Errorf("booking: %s %s: %w", t.kind, code, ErrHoldExpired)
	case StatusConfirmed:
		return fmt.Errorf("booking: %s %s: %w", t.kind, code, ErrOrderConfirmed)
	}
	return fmt.Errorf("booking: %s %s from %s: %w", t.kind, code, status, ErrOrderNotFound)
}

// moved is o after t, made at now.
func moved(o Order, t transition, now time.Time) Order {
	o.Status = t.to
	if t.release {
		o.EndedAt, o.CancelledBy = &now, t.by
	} else {
		o.ConfirmedAt = &now
	}
	return o
}

// afterMove does what follows a committed transition from order o to done, which cannot undo it: the seats'
// state in Redis and in this instance's memo, the admitted sockets' seat maps, the holder's slot (a held
// order kept it), and the line: a confirmation that sold the last seat closes it, a release reopens it.
// Its failures are an AfterCommitError (Redis forgets nothing SQL does not rebuild: the seat map reloads,
// the slot lapses by time).
func (b *Booking) afterMove(ctx context.Context, o, done Order, t transition) error {
	ctx = context.WithoutCancel(ctx)
	var after []error
	op := "confirm"
	if t.release {
		op = "release"
		b.sold.forget(o.Screening, o.Seats)
	}
	args := []any{op}
	for _, s := range o.Seats {
		args = append(args, s)
	}
	after = append(after, b.seats.ChangeSeats(ctx, o.Screening, args...))
	b.news.add(o.Screening, o.Seats, done.Status)
	if o.Status == StatusHeld && o.HoldExpiresAt != nil {
		after = append(after, b.admissions.FreeOrderSlot(ctx, o.Screening, o.Holder, *o.HoldExpiresAt))
	}
	after = append(after, b.lineAfter(ctx, o.Screening, t, len(o.Seats)))
	if err := errors.Join(after...); err != nil {
		return &AfterCommitError{Err: err}
	}
	return nil
}

// lineAfter moves the screening's line after transition t: a release reopens it (unless the operator closed
// the sale); a confirmation that left no seat available nor held closes it.
func (b *Booking) lineAfter(ctx context.Context, screening string, t transition, seats int) error {
	if t.release {
		closed, waitlist, err := b.store.saleState(ctx, screening, b.settings.Waitlist)
		if err != nil {
			return err
		}
		// Its screening.reopened webhook, if it reopened the sale, was written with the move (lineEvent). The
		// seats available now bound what a waitlist offers (-1 when they cannot be counted, or no waitlist
		// asks: a screening without one is not counted for).
		available := -1
		if waitlist && !closed {
			if cat, err := b.catalog(ctx, screening); err == nil {
				if left, err := b.store.seatsTaken(ctx, screening, len(cat.seats)); err == nil {
					available = left.available
				}
			}
		}
		_, err = b.admissions.Reopen(ctx, screening, !closed, seats, available)
		return err
	}
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return err
	}
	left, err := b.store.seatsTaken(ctx, screening, len(cat.seats))
	if err != nil || left.available > 0 || left.held > 0 {
		return err
	}
	// Its screening.sold_out webhook was written with the confirmation (lineEvent).
	_, err = b.closeLine(ctx, screening)
	return err
}

// sellOut closes the line of a screening whose last seat a reservation sold (instant checkout), and writes
// its webhook once per closing (however many instances close it, they read the same epoch): the
// reservation's transaction cannot know it sold the last seat, as the reservations beside it commit unseen.
func (b *Booking) sellOut(ctx context.Context, screening string) error {
	epoch, err := b.closeLine(ctx, screening)
	if err != nil {
		return err
	}
	return b.screeningEvent(ctx, "screening.sold_out", screening, epoch)
}

// closeLine closes the line of a screening whose every seat is sold (kept as its waitlist when it keeps
// one), and returns the closing's epoch.
func (b *Booking) closeLine(ctx context.Context, screening string) (int64, error) {
	waitlist, err := b.store.waitlist(ctx, screening, b.settings.Waitlist)
	if err != nil {
		return 0, err
	}
	return b.admissions.SellOut(ctx, screening, waitlist)
}

// screeningEvent writes the webhook typ of the screening's line event numbered epoch, once: its id is made
// of the three.
func (b *Booking) screeningEvent(ctx context.Context, typ, screening string, epoch int64) error {
	if !b.settings.Webhooks {
		return nil
	}
	id := fmt.Sprintf("msg_%s_%s_%d", typ, screening, epoch)
	return b.store.screeningEvent(ctx, id, typ, map[string]any{"screening": screening})
}
