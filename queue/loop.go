// One screening's admission loop: it waits for the sale time, opens the line, ticks at wall-clock multiples
// of its interval, and refills freed slots when woken.

package queue

import (
	"context"
	"sync/atomic"
	"time"
)

// loopState is what others may see of a screening's loop: its settings and its wake-up.
type loopState struct {
	wake     chan struct{}
	settings atomic.Pointer[Settings]
	opensAt  atomic.Int64 // Unix ms
}

// loop waits for the sale time, opens the line, then ticks the screening at each wall-clock multiple of
// its interval (read again every tick, so a change takes effect at once), and refills freed slots when woken.
func (s *Scheduler) loop(ctx context.Context, screening string, l *loopState) {
	opened := false
	timer := time.NewTimer(time.Until(time.UnixMilli(l.opensAt.Load())))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-timer.C:
			settings := *l.settings.Load()
			tickNow := opened
			if !opened {
				if now.Before(time.UnixMilli(l.opensAt.Load())) {
					timer.Reset(time.Until(time.UnixMilli(l.opensAt.Load())))
					continue // the sale time moved later
				}
				// The instance that opens the line admits at once: the sale starts on the second. A line
				// already open (by another instance, or before a restart) keeps the ticks' wall-clock pace.
				opened, tickNow = s.open(ctx, screening, now, settings)
			}
			if tickNow {
				res, err := s.runTick(ctx, screening, now, settings)
				if err != nil && ctx.Err() == nil {
					s.log.Error("admission: tick failed", "screening", screening, "err", err)
				}
				s.admitted(ctx, res)
				s.offerNews(ctx, screening, settings)
			}
			timer.Reset(time.Until(nextTick(time.Now(), settings.Interval)))
		case <-l.wake:
			if !opened {
				continue
			}
			res, err := s.refill(ctx, screening, time.Now())
			if err != nil && ctx.Err() == nil {
				s.log.Error("admission: refill failed", "screening", screening, "err", err)
			}
			s.admitted(ctx, res)
			s.offerNews(ctx, screening, *l.settings.Load())
		}
	}
}

// open opens the screening's line (once across instances: the others find it open) and reports whether
// ticks may start and whether this call opened it; a failure is retried at the next tick.
func (s *Scheduler) open(ctx context.Context, screening string, now time.Time, settings Settings) (ready, openedHere bool) {
	o, err := s.q.Open(ctx, screening, now, settings)
	if o.Opened {
		s.metrics.Opens.WithLabelValues(screening).Inc()
		s.metrics.Shuffled.WithLabelValues(screening).Add(float64(o.Shuffled))
		s.metrics.Abandoned.WithLabelValues(screening).Add(float64(o.Abandoned))
		s.log.Info("admission: line opened", "screening", screening, "shuffled", o.Shuffled, "abandoned", o.Abandoned, "beacon_round", o.Round, "beacon_mixed", o.Mixed)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("admission: open", "screening", screening, "err", err)
		}
		return o.Opened, o.Opened // opened but not told: ticks go on, and instances catch up from the epoch gap
	}
	return true, o.Opened
}

// refill admits into the slots freed since the last admission, now, and tells every instance.
func (s *Scheduler) refill(ctx context.Context, screening string, now time.Time) (TickResult, error) {
	res, err := s.q.refill(ctx, screening, now, s.settingsOf(screening))
	if err != nil {
		s.metrics.Failures.WithLabelValues(screening).Inc()
		return res, err
	}
	if res.Skip != "" {
		return res, nil
	}
	s.metrics.Refills.WithLabelValues(screening).Inc()
	s.metrics.Admitted.WithLabelValues(screening).Add(float64(len(res.Admitted)))
	s.metrics.Waiting.WithLabelValues(screening).Set(float64(res.Waiting))
	s.metrics.Active.WithLabelValues(screening).Set(float64(res.Active))
	if err := s.publishTick(ctx, res); err != nil {
		s.metrics.Failures.WithLabelValues(screening).Inc()
		return res, err
	}
	return res, nil
}

func nextTick(now time.Time, interval time.Duration) time.Time {
	return now.Truncate(interval).Add(interval)
}
