// The playground's second demo screening, paced for a person with a few browser tabs rather than for the
// load test (demo.line; make run turns it on).

package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
)

// DemoLine is the id of the screening demo.line seeds.
const DemoLine = "demo-line"

// demoLinePace admits one user a tick (the server's admission.interval, 1 s under make run) and never more
// than two at once, each admitted for at most a minute: with three tabs or more, the third waits until one
// of the first two reserves, leaves or lets its minute lapse, and the line visibly moves. The load test's
// `demo` keeps the server's pace, or 2,000 users would take minutes.
var demoLinePace = queue.Settings{BatchSize: 1, MaxActive: 2, ActiveTTL: time.Minute}

// seedDemoLine creates the demo-line screening (rows A–J × seats 1–10, on sale now) unless it exists.
func seedDemoLine(ctx context.Context, store *booking.Store, log *slog.Logger) error {
	now := time.Now().UTC().Truncate(time.Second)
	err := store.CreateScreening(ctx, booking.Screening{
		ID: DemoLine, Name: "Demo screening, slow line (one admitted at a time, two choosing at once)",
		StartsAt: now.Add(2 * time.Hour), SaleOpensAt: now,
	}, booking.Grid(10, 10), demoLinePace)
	switch {
	case errors.Is(err, booking.ErrScreeningExists):
		return nil
	case err != nil:
		return err
	}
	log.Info("seeded the demo screening", "screening", DemoLine, "seats", 100, "batch_size", demoLinePace.BatchSize,
		"max_active", demoLinePace.MaxActive, "active_ttl", demoLinePace.ActiveTTL.String())
	return nil
}
