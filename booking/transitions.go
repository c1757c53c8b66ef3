// An order's transitions: confirmed when its buyer paid, cancelled by its buyer (held) or the operator (held
// or confirmed), expired when its hold lapsed. Each is one transaction that moves the order's status only
// from the statuses it may leave (a compare-and-set on the row, so two instances never both make it),
// releases its seats with a new fence on their rows when it ends the order, and writes its webhook; then
// Redis, the memo and every instance's sockets follow.

package booking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
)

// Who cancelled an order.
const (
	ByBuyer = "buyer"
	ByAdmin = "admin"
)

// transition is one move of an order: from one of from to to; release when it gives its seats back.
type transition struct {
	name    string // confirm, cancel, expire: the webhook's and the metrics' word
	from    []string
	to      string
	release bool
	by      string // cancel: who
}

var (
	confirmOrder     = transition{name: "confirm", from: []string{StatusHeld}, to: StatusConfirmed}
	expireOrder      = transition{name: "expire", from: []string{StatusHeld}, to: StatusExpired, release: true}
	buyerCancelOrder = transition{name: "cancel", from: []string{StatusHeld}, to: StatusCancelled, release: true, by: ByBuyer}
	adminCancelOrder = transition{name: "cancel", from: []string{StatusHeld, StatusConfirmed}, to: StatusCancelled, release: true, by: ByAdmin}
)

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

// move makes transition t of the order with code, or says why it cannot: a held order whose hold lapsed is
// expired on the way (ErrHoldExpired).
func (b *Booking) move(ctx context.Context, code string, t transition) (Order, error) {
	if !ValidOrderCode(code) {
		return Order{}, fmt.Errorf("booking: order: %w", ErrBadOrderCode)
	}
	o, err := b.store.Order(ctx, code)
	if err != nil {
		return Order{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond) // as the database keeps it
	if o.Status == StatusHeld && o.HoldExpiresAt != nil && !o.HoldExpiresAt.After(now) && t.name != "expire" {
		// Expired on the way; what follows its commit may have failed (the reconciler catches the seats up),
		// but the answer is the same: the hold is over.
		if _, err := b.move(ctx, code, expireOrder); err != nil && !errors.Is(err, ErrHoldExpired) && !errors.As(err, new(*AfterCommitError)) {
			return Order{}, err
		}
		b.metrics.transition(t.name, ErrHoldExpired)
		return Order{}, fmt.Errorf("booking: %s %s: %w", t.name, code, ErrHoldExpired)
	}
	if !slices.Contains(t.from, o.Status) {
		err := refusal(t, o.Status, code)
		b.metrics.transition(t.name, err)
		return Order{}, err
	}
	done, err := b.commitMove(ctx, o, t, now)
	if errors.Is(err, errMoved) {
		return b.move(ctx, code, t) // another made a transition first: say what it is now
	}
	b.metrics.transition(t.name, err)
	if err != nil {
		return Order{}, err
	}
	return done, b.afterMove(ctx, o, done, t)
}

// refusal is why transition t cannot leave status.
func refusal(t transition, status, code string) error {
	switch status {
	case StatusCancelled:
		return fmt.Errorf("booking: %s %s: %w", t.name, code, ErrOrderCancelled)
	case StatusExpired:
		return fmt.Errorf("booking: %s %s: %w", t.name, code, ErrHoldExpired)
	case StatusConfirmed:
		return fmt.Errorf("booking: %s %s: %w", t.name, code, ErrOrderConfirmed)
	}
	return fmt.Errorf("booking: %s %s from %s: %w", t.name, code, status, ErrOrderNotFound)
}

// errMoved: the order left the status the transition read before its transaction could move it.
var errMoved = errors.New("booking: the order moved meanwhile")

// commitMove makes t of o in one transaction: the status moves only from the one read (else errMoved),
// the seats of an ended order stop being live and get a new fence, and the webhook is written.
func (b *Booking) commitMove(ctx context.Context, o Order, t transition, now time.Time) (Order, error) {
	tx, err := b.store.db.BeginTxx(ctx, nil)
	if err != nil {
		return Order{}, fmt.Errorf("booking: %s: %w", t.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	query := `UPDATE reservations SET status = ?, ended_at = ?, cancelled_by = ? WHERE id = ? AND status = ?`
	args := []any{t.to, now, nullable(t.by), o.ID, o.Status}
	switch t.name {
	case "confirm":
		query = `UPDATE reservations SET status = ?, confirmed_at = ? WHERE id = ? AND status = ? AND hold_expires_at > ?`
		args = []any{t.to, now, o.ID, o.Status, now}
	case "expire":
		query += ` AND hold_expires_at <= ?`
		args = append(args, now)
	}
	res, err := tx.ExecContext(ctx, tx.Rebind(query), args...)
	if err != nil {
		return Order{}, fmt.Errorf("booking: %s %s: %w", t.name, o.Code, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return Order{}, errMoved
	}
	done := moved(o, t, now)
	if t.release {
		if err := b.store.releaseSeats(ctx, tx, o); err != nil {
			return Order{}, err
		}
	}
	if b.settings.Webhooks {
		if err := enqueue(ctx, tx, "order."+done.Status, done); err != nil {
			return Order{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return Order{}, fmt.Errorf("booking: %s %s: %w", t.name, o.Code, err)
	}
	return done, nil
}

// moved is o after t, made at now.
func moved(o Order, t transition, now time.Time) Order {
	o.Status = t.to
	if t.to == StatusConfirmed {
		o.ConfirmedAt = &now
	} else {
		o.EndedAt, o.CancelledBy = &now, t.by
	}
	return o
}

// releaseSeats ends the live seats of order o in tx, and writes a new fencing number on their rows: a
// reservation that fenced them before and whose lock lapsed cannot write over the seats' next holder.
func (s *Store) releaseSeats(ctx context.Context, tx *sqlx.Tx, o Order) error {
	if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE reservation_seats SET live = FALSE WHERE reservation_id = ? AND live`), o.ID); err != nil {
		return fmt.Errorf("booking: release the seats of %s: %w", o.Code, err)
	}
	fence := any(nil)
	if s.db.DriverName() == "postgres" {
		if err := tx.GetContext(ctx, &fence, `SELECT nextval('seat_fence')`); err != nil {
			return fmt.Errorf("booking: release the seats of %s: %w", o.Code, err)
		}
	} else {
		n, err := s.nextFence(ctx, tx)
		if err != nil {
			return err
		}
		fence = n
	}
	q, args, err := sqlx.In(`UPDATE seats SET fence = ? WHERE screening_id = ? AND seat_id IN (?)`, fence, o.Screening, o.Seats)
	if err != nil {
		return fmt.Errorf("booking: release the seats of %s: %w", o.Code, err)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(q), args...); err != nil {
		return fmt.Errorf("booking: release the seats of %s: %w", o.Code, err)
	}
	return nil
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
	after = append(after, b.lineAfter(ctx, o.Screening, t))
	if err := errors.Join(after...); err != nil {
		return &AfterCommitError{Err: err}
	}
	return nil
}

// lineAfter moves the screening's line after transition t: a release reopens it (unless the operator closed
// the sale); a confirmation that left no seat available nor held closes it.
func (b *Booking) lineAfter(ctx context.Context, screening string, t transition) error {
	if t.release {
		closed, err := b.store.closedByOperator(ctx, screening)
		if err != nil {
			return err
		}
		epoch, err := b.admissions.Reopen(ctx, screening, !closed)
		if err == nil && epoch > 0 {
			err = b.screeningEvent(ctx, "screening.reopened", screening, epoch)
		}
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
	return b.sellOut(ctx, screening)
}

// sellOut closes the line of a screening whose every seat is sold, and writes its webhook once per closing
// (however many instances close it, they read the same epoch).
func (b *Booking) sellOut(ctx context.Context, screening string) error {
	epoch, err := b.admissions.SellOut(ctx, screening)
	if err != nil {
		return err
	}
	return b.screeningEvent(ctx, "screening.sold_out", screening, epoch)
}

// screeningEvent writes the webhook typ of the screening's line event numbered epoch, once: its id is made
// of the three.
func (b *Booking) screeningEvent(ctx context.Context, typ, screening string, epoch int64) error {
	if !b.settings.Webhooks {
		return nil
	}
	id := fmt.Sprintf("msg_%s_%s_%d", typ, screening, epoch)
	return enqueueOnce(ctx, b.store.db, id, typ, map[string]any{"screening": screening})
}
