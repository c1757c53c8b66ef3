// A screening's catalog in memory: its seats and sale time, loaded from SQL once (they never change) and
// shared by every request that needs them.

package booking

import (
	"context"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/queue"
)

// catalog is a screening's seats, which never change once created: the map for checks, the list (in map
// order) for the seat map.
type catalog struct {
	ids     map[string]bool
	seats   []Seat
	opensAt time.Time // the sale time, which never changes either
}

// catalog returns the screening's catalog: from memory after the first load, which the requests that miss
// together share.
func (b *Booking) catalog(ctx context.Context, screening string) (*catalog, error) {
	b.mu.Lock()
	cat, ok := b.catalogs[screening]
	b.mu.Unlock()
	if ok {
		return cat, nil
	}
	v, err, _ := b.loading.Do(screening, func() (any, error) {
		cat, err := b.store.catalog(ctx, screening)
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.catalogs[screening] = cat
		b.mu.Unlock()
		return cat, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*catalog), nil
}

// Exists reports ErrUnknownScreening for a screening that does not exist.
func (b *Booking) Exists(ctx context.Context, screening string) error {
	_, err := b.OpensAt(ctx, screening)
	return err
}

// OpensAt returns the screening's sale time (from memory after the first call), or ErrUnknownScreening.
func (b *Booking) OpensAt(ctx context.Context, screening string) (time.Time, error) {
	if !queue.ValidScreening(screening) {
		return time.Time{}, fmt.Errorf("booking: %q: %w", truncate(screening, 64), ErrUnknownScreening)
	}
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return time.Time{}, err
	}
	return cat.opensAt, nil
}
