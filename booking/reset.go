// Resetting a sale and archiving a screening, the operator's ways to run a demo again and to put a test
// screening away.

package booking

import (
	"context"
	"fmt"
	"time"
)

// Reset is what ResetSale deleted.
type Reset struct {
	// Orders is how many orders of the screening were deleted, of every status; Live how many of them were
	// held or confirmed.
	Orders int64 `json:"orders_deleted"`
	Live   int64 `json:"live_orders_deleted"`
	// Epoch numbers the reset among the line's events.
	Epoch int64 `json:"epoch"`
}

// LiveOrders counts the screening's held and confirmed orders: the buyers a reset would take seats from.
func (s *Store) LiveOrders(ctx context.Context, id string) (int64, error) {
	return liveOrders(ctx, s.db, id)
}

// liveOrders is LiveOrders on q, the store's database or a transaction of it.
func liveOrders(ctx context.Context, q querier, id string) (int64, error) {
	var n int64
	if err := q.GetContext(ctx, &n, q.Rebind(`SELECT COUNT(*) FROM reservations
		WHERE screening_id = ? AND status IN ('held', 'confirmed')`), id); err != nil {
		return 0, fmt.Errorf("booking: live orders of %s: %w", id, err)
	}
	return n, nil
}

// clearSale deletes every order of the screening (their seats with them) and the operator's closing, in one
// transaction; unless force, it refuses with ErrSaleHasOrders, deleting nothing, when an order is held or
// confirmed. The screening, its seats, settings, pause, access codes and webhook history stay.
func (s *Store) clearSale(ctx context.Context, id string, force bool) (Reset, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return Reset{}, fmt.Errorf("booking: reset %s: %w", id, err)
	}
	defer tx.Rollback()
	var out Reset
	if out.Live, err = liveOrders(ctx, tx, id); err != nil {
		return Reset{}, fmt.Errorf("booking: reset: %w", err)
	}
	if out.Live > 0 && !force {
		return Reset{}, fmt.Errorf("booking: reset %s: %d live orders: %w", id, out.Live, ErrSaleHasOrders)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM reservation_seats WHERE screening_id = ?`), id); err != nil {
		return Reset{}, fmt.Errorf("booking: reset %s seats: %w", id, err)
	}
	res, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM reservations WHERE screening_id = ?`), id)
	if err != nil {
		return Reset{}, fmt.Errorf("booking: reset %s orders: %w", id, err)
	}
	if out.Orders, err = res.RowsAffected(); err != nil {
		return Reset{}, fmt.Errorf("booking: reset %s orders: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE screenings SET closed_at = NULL WHERE id = ?`), id); err != nil {
		return Reset{}, fmt.Errorf("booking: reset %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return Reset{}, fmt.Errorf("booking: reset %s: %w", id, err)
	}
	return out, nil
}

// ResetSale puts the screening's sale back as it was before anyone came: its orders deleted in SQL, its line,
// passes, seat locks and sold seats gone from Redis, its line open again (queue.Reset; the sockets come back
// into the fresh line). A sale with held or confirmed orders is refused with ErrSaleHasOrders, before
// anything changes, unless force. An archived screening is refused (ErrArchived): unarchive it first.
func (b *Booking) ResetSale(ctx context.Context, id string, force bool) (Reset, error) {
	sum, err := b.store.Screening(ctx, id)
	if err != nil {
		return Reset{}, err
	}
	if sum.ArchivedAt != nil {
		return Reset{}, fmt.Errorf("booking: reset %s: %w", id, ErrArchived)
	}
	if !force {
		n, err := b.store.LiveOrders(ctx, id)
		if err != nil {
			return Reset{}, err
		}
		if n > 0 {
			return Reset{}, fmt.Errorf("booking: reset %s: %d live orders: %w", id, n, ErrSaleHasOrders)
		}
	}
	var out Reset
	epoch, err := b.admissions.Reset(ctx, id, func(ctx context.Context) error {
		// Checked again with the line closed: an order made since the count above is not deleted unforced.
		out, err = b.store.clearSale(ctx, id, force)
		return err
	})
	if err != nil {
		return Reset{}, err
	}
	out.Epoch = epoch
	return out, nil
}

// SetArchived archives the screening (off the public list, its sale closed by the caller: queue.CloseSale)
// or brings it back (listed again; the sale stays closed until a reset). Archiving records the closing as
// CloseSale does, so the schedulers stop; archiving twice keeps the first time.
func (s *Store) SetArchived(ctx context.Context, id string, archived bool, at time.Time) error {
	q := `UPDATE screenings SET archived_at = NULL WHERE id = ?`
	args := []any{id}
	if archived {
		q = `UPDATE screenings SET archived_at = COALESCE(archived_at, ?), closed_at = COALESCE(closed_at, ?) WHERE id = ?`
		args = []any{at.UTC(), at.UTC(), id}
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(q), args...)
	if err != nil {
		return fmt.Errorf("booking: archive %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: archive %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: archive %q: %w", id, ErrUnknownScreening)
	}
	return nil
}
