// An order's transitions in SQL: each one transaction that moves the order's row only from the status it was
// read in (a compare-and-set, so two instances never both make it), gives back the seats of an order it
// ends with a new fence on their rows, and writes its webhook into webhook's outbox; a screening's line
// events' webhooks; and the lapsed holds the sweeper expires.

package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/waitroom/waitroom/webhook"
)

// errMoved: the order left the status the transition read before its transaction could move it.
var errMoved = errors.New("booking: the order moved meanwhile")

// moveOrder makes t of o at now in one transaction: the status moves only from the one read (else
// errMoved), the seats of an ended order stop being live and get a new fence, and, when webhooks, the
// webhook is written, with the screening's own when the move sold its last seat (screening.sold_out) or
// gave seats back to a screening that had none (screening.reopened): lineEvent. total is the screening's
// number of seats.
func (s *Store) moveOrder(ctx context.Context, o Order, t transition, now time.Time, webhooks bool, total int) (Order, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return Order{}, fmt.Errorf("booking: %s: %w", t.kind, err)
	}
	defer func() { _ = tx.Rollback() }()
	query, args := orderUpdate(o, t, now)
	res, err := tx.ExecContext(ctx, tx.Rebind(query), args...)
	if err != nil {
		return Order{}, fmt.Errorf("booking: %s %s: %w", t.kind, o.Code, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Order{}, fmt.Errorf("booking: %s %s: %w", t.kind, o.Code, err)
	}
	if n != 1 {
		return Order{}, errMoved
	}
	done := moved(o, t, now)
	if t.release {
		if err := s.releaseSeats(ctx, tx, o); err != nil {
			return Order{}, err
		}
	}
	if webhooks {
		if err := webhook.Enqueue(ctx, tx, webhook.NewMsgID(), "order."+done.Status, done); err != nil {
			return Order{}, err
		}
		if err := s.lineEvent(ctx, tx, o, t, total); err != nil {
			return Order{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return Order{}, fmt.Errorf("booking: %s %s: %w", t.kind, o.Code, err)
	}
	return done, nil
}

// lineEvent writes, in the transaction of order o's move t, the screening's webhook that move causes: a
// confirmation that left no seat available nor held sells the screening out (screening.sold_out); a release
// that gave seats back to a screening with none available reopens it (screening.reopened). Two moves of one
// screening in flight at once each count before the other commits; so a move that finds itself at the edge
// (no seat available, its own given back aside) takes the screening's row lock and counts again, and of two
// such moves the second sees the first: each closing and reopening is written once. Its id names the move.
func (s *Store) lineEvent(ctx context.Context, tx *tx, o Order, t transition, total int) error {
	if total == 0 {
		return nil // a site-wide room never sells out
	}
	// edge counts whether the move stands where the screening changes: with final, whether it sold the last
	// seat (none available, none held) or gave the first back; without, whether it may have (no seat
	// available but for the ones it gave back), so that the row lock is taken only then.
	edge := func(final bool) (bool, error) {
		live, err := countSold(ctx, tx, o.Screening)
		if err != nil {
			return false, err
		}
		if t.release {
			return total-live == len(o.Seats), nil // none were available before this release
		}
		if live < total {
			return false, nil
		}
		if !final {
			// Every seat is taken. Only the moves in flight now (each holds one of the pool's connections)
			// can be confirming the held orders this one sees: with more held orders than that, one stays
			// held whatever they do, and the screening's row is not locked (every confirmation of a sale's
			// paying phase would wait on it).
			bound := s.db.Stats().MaxOpenConnections
			if bound == 0 {
				return true, nil
			}
			var heldOrders int
			err = tx.GetContext(ctx, &heldOrders, tx.Rebind(`SELECT COUNT(*) FROM reservations WHERE screening_id = ? AND status = 'held'`), o.Screening)
			return heldOrders <= bound, err
		}
		var held int
		err = tx.GetContext(ctx, &held, tx.Rebind(`SELECT COUNT(*) FROM reservation_seats r JOIN reservations o ON o.id = r.reservation_id
			WHERE r.screening_id = ? AND r.live AND o.status = 'held'`), o.Screening)
		return held == 0, err
	}
	postgres := s.db.DriverName() == "postgres"
	at, err := edge(!postgres) // SQLite's write transactions run one at a time: its count is final
	if err != nil || !at {
		return err
	}
	if postgres {
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM screenings WHERE id = $1 FOR UPDATE`, o.Screening); err != nil {
			return fmt.Errorf("booking: lock %s: %w", o.Screening, err)
		}
		if at, err = edge(true); err != nil || !at { // read committed: this count sees what committed before the lock
			return err
		}
	}
	typ := "screening.sold_out"
	if t.release {
		typ = "screening.reopened"
	}
	id := fmt.Sprintf("msg_%s_%s_%s_%s", typ, o.Screening, o.Code, t.kind)
	return webhook.Enqueue(ctx, tx, id, typ, map[string]any{"screening": o.Screening})
}

// orderUpdate is the statement that moves o's row by t at now, and its arguments: a confirmation writes
// confirmed_at, a transition that ends the order ended_at and cancelled_by; both only from the status read,
// and as t's hold guard asks, while the hold runs or once it lapsed.
func orderUpdate(o Order, t transition, now time.Time) (string, []any) {
	query := `UPDATE reservations SET status = ?, confirmed_at = ? WHERE id = ? AND status = ?`
	args := make([]any, 0, 6)
	if t.release {
		query = `UPDATE reservations SET status = ?, ended_at = ?, cancelled_by = ? WHERE id = ? AND status = ?`
		args = append(args, t.to, now, nullable(t.by), o.ID, o.Status)
	} else {
		args = append(args, t.to, now, o.ID, o.Status)
	}
	switch t.hold {
	case holdRunning:
		query += ` AND hold_expires_at > ?`
		args = append(args, now)
	case holdLapsed:
		query += ` AND hold_expires_at <= ?`
		args = append(args, now)
	}
	return query, args
}

// releaseSeats ends the live seats of order o in tx, and writes a new fencing number on their rows: a
// reservation that fenced them before and whose lock lapsed cannot write over the seats' next holder.
func (s *Store) releaseSeats(ctx context.Context, tx *tx, o Order) error {
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

// screeningEvent writes the webhook typ of a screening's line event under the message id id, once, outside
// any transaction: the event itself was made in Redis.
func (s *Store) screeningEvent(ctx context.Context, id, typ string, data any) error {
	return webhook.Enqueue(ctx, s.db, id, typ, data)
}

// lapsedHolds returns the codes of at most limit held orders whose hold lapsed by now, the earliest first.
func (s *Store) lapsedHolds(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var codes []string
	err := s.db.SelectContext(ctx, &codes, s.db.Rebind(fmt.Sprintf(`SELECT code FROM reservations
		WHERE status = 'held' AND hold_expires_at <= ? ORDER BY hold_expires_at LIMIT %d`, limit)), now.UTC())
	if err != nil {
		return nil, fmt.Errorf("booking: sweep: %w", err)
	}
	return codes, nil
}
