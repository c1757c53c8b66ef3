// The store, booking's SQL side: its reads are in store_read.go, a reservation's write in store_write.go,
// creating and managing screenings in screenings.go.

package booking

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Store is the SQL side: screenings, seats, reservations.
type Store struct {
	db *sqlx.DB
}

// NewStore returns the store kept in db (migrated).
func NewStore(db *sqlx.DB) *Store { return &Store{db: db} }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("booking: ping: %w", err)
	}
	return nil
}
