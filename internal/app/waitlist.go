// What the wiring does with a waitlist's offers once the admission made, lapsed or saw them taken: their
// webhooks, written by booking.

package app

import (
	"context"

	"github.com/waitroom/waitroom/queue"
)

// offerNews is the scheduler's offer hook (queue.Scheduler.SetOfferHook): each piece of news reaches the
// webhooks' outbox once.
func (a *App) offerNews(ctx context.Context, screening string, news []queue.OfferNews) {
	if err := a.Booking.OfferNews(ctx, screening, news); err != nil && ctx.Err() == nil {
		a.Log.Warn("waitlist: offer webhooks", "screening", screening, "err", err)
	}
}
