// This instance's report to the control room: its open sockets by screening, every second.

package app

import (
	"context"
	"time"
)

// reportEvery paces this instance's report of its sockets to the control room.
const reportEvery = time.Second

// report tells the control room this instance's sockets by screening every second until ctx ends.
func (a *App) report(ctx context.Context) error {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := a.Queue.Report(ctx, a.Instance, a.Hub.Counts()); err != nil && ctx.Err() == nil {
				a.Log.Warn("report sockets", "err", err)
			}
		}
	}
}
