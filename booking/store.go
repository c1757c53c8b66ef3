// The store, booking's SQL side: its reads are in store_read.go, a reservation's write in store_write.go, an
// order's transitions in store_orders.go, creating and managing screenings in screenings.go.

package booking

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/waitroom/waitroom/overload"
)

// Store is the SQL side: screenings, seats, reservations.
type Store struct {
	db *pool
	// now is the clock of an order's times: when it was made, hence when its hold lapses, and when a
	// transition reads it and moves it (time.Now; a test sets its own, SetClock).
	now func() time.Time
	// waitlistDefault is the server's booking.waitlist, for the screenings without their own (the
	// scheduler's list of sales: Sales).
	waitlistDefault bool
}

// NewStore returns the store kept in db (migrated).
func NewStore(db *sqlx.DB) *Store { return &Store{db: &pool{db: db}, now: time.Now} }

// SetGate puts g in front of the store's database: every statement and transaction takes one of its slots
// for as long as it holds a connection, in the order of its class (package overload). Size g to the pool's
// connections less those used outside the store. Call it before s is used.
func (s *Store) SetGate(g *overload.Gate) { s.db.gate = g }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("booking: ping: %w", err)
	}
	return nil
}
