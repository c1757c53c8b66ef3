// The sweeper: holds that lapsed are expired, their seats given back, within a second of the lapse; and
// every reconcileEvery the seat sets in Redis are reconciled with SQL (reconcile.go). Every instance runs
// it, and one at a time sweeps (a lease in Redis); a hold expires once however many sweep, as every
// transition does (the compare-and-set on its row).

package booking

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/waitroom/waitroom/ids"
)

const (
	// sweepEvery is how often the sweeper looks for lapsed holds: a hold is expired within this of its lapse
	// (and the time its transaction takes).
	sweepEvery = 250 * time.Millisecond
	// sweepLease is how long the sweeper's lease lasts without a renewal: another instance sweeps once an
	// instance holding it is gone this long.
	sweepLease = 2 * time.Second
	// sweepBatch bounds the holds one sweep reads; sweepersAtOnce how many it expires at once (each is a
	// few round trips: a burst of lapses is released in a fraction of a second, not one after the other).
	sweepBatch     = 500
	sweepersAtOnce = 8
)

// Run does booking's background work until ctx ends: the sweeper (below) and the seat news (news.go),
// telling log of what fails.
func (b *Booking) Run(ctx context.Context, log *slog.Logger) error {
	var wg sync.WaitGroup
	wg.Go(func() { b.publishNews(ctx, log) })
	err := b.runSweeper(ctx, log)
	wg.Wait()
	return err
}

// runSweeper expires lapsed holds every sweepEvery while this instance holds the sweeper's lease, until ctx
// ends, telling log of a failed sweep.
func (b *Booking) runSweeper(ctx context.Context, log *slog.Logger) error {
	owner := b.instance + "/" + ids.New()[:8]
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	var reconciled time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		held, err := b.seats.RenewLease(ctx, "sweeper", owner, sweepLease)
		if err != nil || !held {
			continue // Redis away, or another instance sweeps
		}
		if _, err := b.Sweep(ctx, b.store.now()); err != nil && ctx.Err() == nil { // the holds' own clock
			log.Warn("booking: sweep the lapsed holds", "err", err)
		}
		if time.Since(reconciled) < reconcileEvery {
			continue
		}
		reconciled = time.Now()
		if n, err := b.Reconcile(ctx, b.store.now()); err != nil && ctx.Err() == nil {
			log.Warn("booking: reconcile the seats in Redis with SQL", "err", err)
		} else if n > 0 {
			log.Warn("booking: seats in Redis corrected from SQL (a transition's follow-up had failed)", "seats", n)
		}
	}
}

// Sweep expires every hold that lapsed by now (at most sweepBatch, the earliest first) and returns how many
// it expired.
func (b *Booking) Sweep(ctx context.Context, now time.Time) (int, error) {
	codes, err := b.store.lapsedHolds(ctx, now, sweepBatch)
	if err != nil {
		return 0, err
	}
	var mu sync.Mutex
	n := 0
	var errs []error
	var g errgroup.Group
	g.SetLimit(sweepersAtOnce)
	for _, code := range codes {
		g.Go(func() error {
			_, err := b.move(ctx, code, expireOrder)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil, errors.As(err, new(*AfterCommitError)):
				n++
			case errors.Is(err, ErrHoldExpired), errors.Is(err, ErrOrderCancelled), errors.Is(err, ErrOrderConfirmed):
				// it ended meanwhile (another sweeper, or its buyer)
			default:
				errs = append(errs, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return n, errors.Join(errs...)
}
