// A waitlist's offers in the webhooks' outbox: what the admission did with each offer (offered, expired,
// taken: queue.OfferNews), written once per offer and kind whichever instance hands it on.

package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// offerEvent is the data of a waitlist.* webhook: the offer is named by its pass's id, never by the
// buyer's token.
type offerEvent struct {
	Screening string    `json:"screening"`
	Offer     string    `json:"offer"`
	Seats     int       `json:"seats"`
	ExpiresAt time.Time `json:"expires_at"`
	// SeatsTaken is how many of the seats the buyer's order holds (waitlist.taken).
	SeatsTaken *int `json:"seats_taken,omitempty"`
}

// OfferNews writes the waitlist.offered, waitlist.expired and waitlist.taken webhooks of what happened to
// the screening's offers (nothing when webhooks are off). Each is written once: its id is the offer's and
// the kind's.
func (b *Booking) OfferNews(ctx context.Context, screening string, news []queue.OfferNews) error {
	if !b.settings.Webhooks {
		return nil
	}
	var errs []error
	for _, n := range news {
		id := pass.ID(screening, n.Token, n.ExpiresAt)
		ev := offerEvent{Screening: screening, Offer: id, Seats: n.Seats, ExpiresAt: n.ExpiresAt.UTC()}
		if n.Kind == "taken" {
			used := n.Used
			ev.SeatsTaken = &used
		}
		typ := "waitlist." + n.Kind
		if err := b.store.screeningEvent(ctx, fmt.Sprintf("msg_%s_%s", typ, id), typ, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
