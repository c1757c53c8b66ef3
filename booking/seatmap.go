// The seat map of a screening during a sale, served from the catalog in memory and the sold and held sets in
// Redis, without SQL: each seat available, held (by an order whose buyer pays) or sold.

package booking

import (
	"context"
	"fmt"
	"slices"
)

// SeatStatus is one seat of the map.
type SeatStatus struct {
	ID     string `db:"seat_id" json:"id"`
	Row    string `db:"row_label" json:"row"`
	Number int    `db:"number" json:"number"`
	Status string `db:"status" json:"status"`
}

// soldSentinel marks a screening's sold set in Redis as loaded from SQL; it is never a seat id.
const soldSentinel = "-"

// Seats returns the seat map without touching SQL: the catalog (in memory, it never changes) and the sold
// and held sets in Redis that every committed order and transition changes (the sold set holds every seat
// taken, the held set those only held). Sets Redis does not have (first use, or after a Redis restart) are
// loaded from SQL once, and the sold set is marked with a sentinel.
func (b *Booking) Seats(ctx context.Context, screening string) ([]SeatStatus, error) {
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return nil, err
	}
	taken, held, err := b.seats.SeatSets(ctx, screening)
	if err != nil {
		return nil, fmt.Errorf("booking: seat map of %s: %w", screening, err)
	}
	if !slices.Contains(taken, soldSentinel) {
		if taken, held, err = b.reloadSeats(ctx, screening); err != nil {
			return nil, err
		}
	}
	state := make(map[string]string, len(taken))
	for _, m := range taken {
		state[m] = "sold"
	}
	for _, m := range held {
		state[m] = "held"
	}
	out := make([]SeatStatus, len(cat.seats))
	for i, s := range cat.seats {
		out[i] = SeatStatus{ID: s.ID, Row: s.Row, Number: s.Number, Status: "available"}
		if st, ok := state[s.ID]; ok {
			out[i].Status = st
		}
	}
	return out, nil
}

// reloadSeats fills the screening's sold and held sets in Redis from SQL, and returns what they hold.
func (b *Booking) reloadSeats(ctx context.Context, screening string) (taken, held []string, err error) {
	fromSQL, err := b.store.Seats(ctx, screening)
	if err != nil {
		return nil, nil, err
	}
	addTaken, addHeld := []any{soldSentinel}, []any{}
	for _, s := range fromSQL {
		switch s.Status {
		case "held":
			addHeld = append(addHeld, s.ID)
			held = append(held, s.ID)
			fallthrough
		case "sold":
			addTaken = append(addTaken, s.ID)
			taken = append(taken, s.ID)
		}
	}
	if err := b.seats.FillSeatSets(ctx, screening, addTaken, addHeld); err != nil {
		return nil, nil, fmt.Errorf("booking: seat map of %s: %w", screening, err)
	}
	return taken, held, nil
}
