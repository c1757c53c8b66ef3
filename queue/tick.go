// One admission tick of the scheduler: take the lock for the tick, admit, tell every instance, release the
// lock, and count what happened.

package queue

import (
	"context"
	"fmt"
	"time"
)

// Tick runs one admission of screening at now with the settings its loop runs with (settingsOf): take the
// lock for this tick, admit, tell every instance, release the lock, count.
func (s *Scheduler) Tick(ctx context.Context, screening string, now time.Time) (TickResult, error) {
	return s.runTick(ctx, screening, now, s.settingsOf(screening))
}

func (s *Scheduler) runTick(ctx context.Context, screening string, now time.Time, settings Settings) (TickResult, error) {
	started := time.Now()
	s.metrics.Runs.WithLabelValues(screening).Inc()
	res, err := s.tick(ctx, screening, now, settings)
	s.metrics.TickSeconds.WithLabelValues(screening).Observe(time.Since(started).Seconds())
	if err != nil {
		s.metrics.Failures.WithLabelValues(screening).Inc()
		// A failed publish comes after the admission: those admitted hold their slots and count.
		s.metrics.Admitted.WithLabelValues(screening).Add(float64(len(res.Admitted)))
		return res, err
	}
	s.metrics.Abandoned.WithLabelValues(screening).Add(float64(res.Abandoned))
	paused := 0.0
	if res.Skip == Paused {
		paused = 1
	}
	if res.Skip != LockNotAcquired {
		s.metrics.Paused.WithLabelValues(screening).Set(paused)
	}
	switch res.Skip {
	case "":
		s.metrics.Admitted.WithLabelValues(screening).Add(float64(len(res.Admitted)))
		s.log.Debug("admission: admitted", "screening", screening, "admitted", len(res.Admitted), "waiting", res.Waiting, "active", res.Active)
	case LockNotAcquired:
		s.metrics.LockMisses.WithLabelValues(screening).Inc()
	case ActiveCapacityReached:
		s.metrics.CapacityHits.WithLabelValues(screening).Inc()
	}
	if res.Skip != "" {
		s.metrics.Skips.WithLabelValues(screening, string(res.Skip)).Inc()
		s.log.Debug("admission: skipped", "screening", screening, "reason", res.Skip)
	}
	if res.Skip != LockNotAcquired {
		s.metrics.Waiting.WithLabelValues(screening).Set(float64(res.Waiting))
		s.metrics.Active.WithLabelValues(screening).Set(float64(res.Active))
	}
	return res, nil
}

func (s *Scheduler) tick(ctx context.Context, screening string, now time.Time, settings Settings) (TickResult, error) {
	// A tick is numbered by the start of its interval, in Unix ms, not by now / interval: the numbers keep
	// rising when an operator lengthens the interval (the lock refuses a number at or below the last one).
	tickNo := now.Truncate(settings.Interval).UnixMilli()
	got, err := s.q.tryLock(ctx, screening, s.owner, tickNo, settings.LockTTL)
	if err != nil {
		return TickResult{Screening: screening, TickAt: now}, err
	}
	if !got {
		return TickResult{Screening: screening, TickAt: now, Skip: LockNotAcquired}, nil
	}
	defer func() {
		// Release even when ctx ended mid-tick, so a restarted instance does not wait out the TTL.
		if _, err := s.q.unlock(context.WithoutCancel(ctx), screening, s.owner); err != nil {
			s.log.Warn("admission: unlock", "screening", screening, "err", err)
		}
	}()
	res, err := s.q.Admit(ctx, screening, now, settings)
	if err != nil {
		return res, err
	}
	if res.Moved {
		return res, s.publishTick(ctx, res)
	}
	return res, nil
}

// publishTick tells every instance what an admission changed.
func (s *Scheduler) publishTick(ctx context.Context, res TickResult) error {
	if err := s.q.publish(ctx, res.Screening, res.Event()); err != nil {
		// The admitted still hold their slots: a reconnect with the token hands them their pass.
		return fmt.Errorf("queue: %s admitted %d but could not tell them: %w", res.Screening, len(res.Admitted), err)
	}
	return nil
}
