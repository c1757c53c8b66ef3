// What the wiring does with the admissions and a waitlist's offers once the admission made them: their
// webhooks, written by booking, and an e-mail to each buyer who left an address and has no socket open.

package app

import (
	"context"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/queue"
)

// offerNews is the scheduler's offer hook (queue.Scheduler.SetOfferHook): each piece of news reaches the
// webhooks' outbox once.
func (a *App) offerNews(ctx context.Context, screening string, news []queue.OfferNews) {
	if err := a.Booking.OfferNews(ctx, screening, news); err != nil && ctx.Err() == nil {
		a.Log.Warn("waitlist: offer webhooks", "screening", screening, "err", err)
	}
}

// notifyWait bounds the e-mails' part of one admission, on the admission loop's goroutine.
const notifyWait = 2 * time.Second

// notifyAdmitted is the scheduler's admit hook when mail is on: of the tokens res admitted (or offered
// seats), those kept for an e-mail (an address left: queue.Keep) with no socket open on any instance get
// one, once per admission whichever instance writes it (notify.Notice's dedup key names the admission).
// A failure here loses those e-mails, not the admission: the buyer's place stands, and a reconnect within
// its time gets the pass.
func (a *App) notifyAdmitted(ctx context.Context, res queue.TickResult) {
	ctx, cancel := context.WithTimeout(ctx, notifyWait)
	defer cancel()
	away, err := a.away(ctx, res.Screening, res.Admitted)
	if err == nil && len(away) > 0 {
		kind := notify.Admission
		if res.Offers != nil {
			kind = notify.Offer
		}
		_, err = a.Notify.Due(ctx, notify.Notice{Screening: res.Screening, Kind: kind, Tokens: away, Deadline: res.ExpiresAt,
			DedupKey: fmt.Sprintf("%s:%s:%d", kind, res.Screening, res.ExpiresAt.UnixMilli())})
	}
	if err != nil && ctx.Err() == nil {
		a.Log.Warn("notify: e-mails of an admission", "screening", res.Screening, "admitted", len(res.Admitted), "err", err)
	}
}

// away returns the tokens, of those given, that left an address and have no socket open now.
func (a *App) away(ctx context.Context, screening string, tokens []string) ([]string, error) {
	kept, err := a.Queue.Kept(ctx, screening, tokens)
	if err != nil {
		return nil, err
	}
	var asked []string
	for i, t := range tokens {
		if kept[i] {
			asked = append(asked, t)
		}
	}
	open, err := a.Queue.Connected(ctx, screening, asked)
	if err != nil {
		return nil, err
	}
	var away []string
	for i, t := range asked {
		if !open[i] {
			away = append(away, t)
		}
	}
	return away, nil
}
