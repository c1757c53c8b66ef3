// What a socket must bring to get a place in a screening's line, as the store keeps it: the screening's own
// proof-of-work cost (SetPowCost) and the entry rules package entry reads (EntryRules: the cost, and whether
// it asks for an access code, codes.go); the policy on them is entry's.

package booking

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// MaxPowCost bounds a screening's own proof-of-work cost (the mean number of key derivations), as
// config.MaxPowCost bounds pow.cost.
const MaxPowCost = 100_000_000

// EntryRules are what a screening asks of a socket before it gets a place.
type EntryRules struct {
	// PowCost is the screening's own proof-of-work cost; nil: the server's pow.cost.
	PowCost *int
	// CodesRequired says a new place needs an access code (codes.go).
	CodesRequired bool
}

// EntryRules reads what the screening asks of a socket, or ErrUnknownScreening.
func (s *Store) EntryRules(ctx context.Context, id string) (EntryRules, error) {
	var row struct {
		PowCost       sql.NullInt64 `db:"pow_cost"`
		CodesRequired bool          `db:"codes_required"`
	}
	err := s.db.GetContext(ctx, &row, s.db.Rebind(`SELECT pow_cost, codes_required FROM screenings WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return EntryRules{}, fmt.Errorf("booking: entry rules of %q: %w", truncate(id, 64), ErrUnknownScreening)
	}
	if err != nil {
		return EntryRules{}, fmt.Errorf("booking: entry rules of %q: %w", truncate(id, 64), err)
	}
	out := EntryRules{CodesRequired: row.CodesRequired}
	if row.PowCost.Valid {
		cost := int(row.PowCost.Int64)
		out.PowCost = &cost
	}
	return out, nil
}

// SetPowCost sets the screening's own proof-of-work cost (0: none, whatever pow.cost says); nil drops it:
// the screening follows pow.cost again. Each instance reads it again within a second.
func (s *Store) SetPowCost(ctx context.Context, id string, cost *int) error {
	value := any(nil)
	if cost != nil {
		if *cost < 0 || *cost > MaxPowCost {
			return badScreening("pow_cost %d: want 0 (none) to %d", *cost, MaxPowCost)
		}
		value = *cost
	}
	return s.updateScreening(ctx, id, "pow cost", `UPDATE screenings SET pow_cost = ? WHERE id = ?`, value)
}
