// The seat map of a screening during a sale, served from the catalog in memory and the sold set in Redis,
// without SQL.

package booking

import (
	"context"
	"fmt"
	"slices"

	"github.com/waitroom/waitroom/queue"
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
// set in Redis that every committed reservation adds to. A sold set Redis does not have (first use, or
// after a Redis restart) is loaded from SQL once and marked with a sentinel.
func (b *Booking) Seats(ctx context.Context, screening string) ([]SeatStatus, error) {
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return nil, err
	}
	key := queue.Key(b.prefix, screening, "sold")
	members, err := b.rdb.SMembers(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("booking: seat map of %s: %w", screening, err)
	}
	if !slices.Contains(members, soldSentinel) {
		fromSQL, err := b.store.Seats(ctx, screening)
		if err != nil {
			return nil, err
		}
		add := []any{soldSentinel}
		for _, s := range fromSQL {
			if s.Status == "sold" {
				add = append(add, s.ID)
				members = append(members, s.ID)
			}
		}
		if err := b.rdb.SAdd(ctx, key, add...).Err(); err != nil {
			return nil, fmt.Errorf("booking: seat map of %s: %w", screening, err)
		}
	}
	soldSet := make(map[string]bool, len(members))
	for _, m := range members {
		soldSet[m] = true
	}
	out := make([]SeatStatus, len(cat.seats))
	for i, s := range cat.seats {
		out[i] = SeatStatus{ID: s.ID, Row: s.Row, Number: s.Number, Status: "available"}
		if soldSet[s.ID] {
			out[i].Status = "sold"
		}
	}
	return out, nil
}
