package queue

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Screenings lists the screenings the scheduler should run admission for.
type Screenings interface {
	// OnSale returns the ids of the screenings whose sale is open at now.
	OnSale(ctx context.Context, now time.Time) ([]string, error)
}

// refreshEvery is how often the scheduler looks for screenings that opened or ended, so a new screening
// starts admitting without a restart.
const refreshEvery = 2 * time.Second

// Scheduler sets the pace: every screening on sale gets its own loop that ticks at wall-clock multiples of
// the interval, so one slow screening never delays another (the seed's single loop did). Across instances
// each tick runs once: the per-screening lock is taken per tick number.
type Scheduler struct {
	q        *Queue
	list     Screenings
	settings Settings
	owner    string
	metrics  *Metrics
	log      *slog.Logger

	mu    sync.Mutex
	wakes map[string]chan struct{} // screening -> its loop's wake-up, while the loop runs
}

// NewScheduler returns a scheduler for the screenings list names, with owner as this instance's lock id.
func NewScheduler(q *Queue, list Screenings, s Settings, owner string, m *Metrics, log *slog.Logger) *Scheduler {
	return &Scheduler{q: q, list: list, settings: s, owner: owner, metrics: m, log: log, wakes: map[string]chan struct{}{}}
}

// Wake asks the screening's loop on this instance to refill freed slots now rather than at the next tick.
// It never blocks: a wake already pending covers this one.
func (s *Scheduler) Wake(screening string) {
	s.mu.Lock()
	wake := s.wakes[screening]
	s.mu.Unlock()
	if wake == nil {
		return // no loop here (not on sale): the next tick admits into the freed slots
	}
	select {
	case wake <- struct{}{}:
	default:
	}
}

// Finish spends the pass and frees its slot (Queue.Finish), then wakes the loop to refill the slot.
func (s *Scheduler) Finish(ctx context.Context, c Claims) error {
	if err := s.q.Finish(ctx, c); err != nil {
		return err
	}
	s.Wake(c.Screening)
	return nil
}

// Leave takes the token out (Queue.Leave) and, when that freed a slot or moved the line, wakes the loop.
func (s *Scheduler) Leave(ctx context.Context, screening, token string) (bool, error) {
	left, err := s.q.Leave(ctx, screening, token)
	if left {
		s.Wake(screening)
	}
	return left, err
}

// CheckPass is Queue.CheckPass: the Scheduler stands for the queue wherever freeing a slot must refill it.
func (s *Scheduler) CheckPass(ctx context.Context, c Claims) error { return s.q.CheckPass(ctx, c) }

// Close is Queue.Close.
func (s *Scheduler) Close(ctx context.Context, screening string) error {
	return s.q.Close(ctx, screening)
}

// Run keeps one admission loop per screening on sale until ctx ends, and waits for them to stop.
func (s *Scheduler) Run(ctx context.Context) error {
	loops := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer func() {
		for _, stop := range loops {
			stop()
		}
		wg.Wait()
	}()
	refresh := time.NewTicker(refreshEvery)
	defer refresh.Stop()
	for {
		ids, err := s.list.OnSale(ctx, time.Now())
		if err != nil && ctx.Err() == nil {
			s.log.Error("admission: list screenings", "err", err)
		}
		if err == nil {
			onSale := make(map[string]bool, len(ids))
			for _, id := range ids {
				onSale[id] = true
				if _, running := loops[id]; !running {
					loopCtx, stop := context.WithCancel(ctx)
					loops[id] = stop
					wg.Add(1)
					go func() {
						defer wg.Done()
						s.loop(loopCtx, id)
					}()
					s.log.Info("admission: started", "screening", id, "interval", s.settings.Interval.String())
				}
			}
			for id, stop := range loops {
				if !onSale[id] {
					stop()
					delete(loops, id)
					s.log.Info("admission: stopped", "screening", id)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.C:
		}
	}
}

// loop ticks one screening at each wall-clock multiple of the interval, and refills freed slots when woken.
func (s *Scheduler) loop(ctx context.Context, screening string) {
	wake := make(chan struct{}, 1)
	s.mu.Lock()
	s.wakes[screening] = wake
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.wakes, screening)
		s.mu.Unlock()
	}()
	interval := s.settings.Interval
	timer := time.NewTimer(time.Until(nextTick(time.Now(), interval)))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-timer.C:
			if _, err := s.Tick(ctx, screening, now); err != nil && ctx.Err() == nil {
				s.log.Error("admission: tick failed", "screening", screening, "err", err)
			}
			timer.Reset(time.Until(nextTick(time.Now(), interval)))
		case <-wake:
			if _, err := s.Refill(ctx, screening, time.Now()); err != nil && ctx.Err() == nil {
				s.log.Error("admission: refill failed", "screening", screening, "err", err)
			}
		}
	}
}

// Refill admits into the slots freed since the last admission, now, and tells every instance.
func (s *Scheduler) Refill(ctx context.Context, screening string, now time.Time) (TickResult, error) {
	res, err := s.q.Refill(ctx, screening, now, s.settings)
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
	return res, s.publishTick(ctx, res)
}

// publishTick tells every instance what an admission changed.
func (s *Scheduler) publishTick(ctx context.Context, res TickResult) error {
	if err := s.q.publish(ctx, res.Screening, res.Event()); err != nil {
		// The admitted still hold their slots: a reconnect with the token hands them their pass.
		return fmt.Errorf("queue: %s admitted %d but could not tell them: %w", res.Screening, len(res.Admitted), err)
	}
	return nil
}

func nextTick(now time.Time, interval time.Duration) time.Time {
	return now.Truncate(interval).Add(interval)
}

// Tick runs one admission of screening at now: take the lock for this tick, admit, tell every instance,
// release the lock, count.
func (s *Scheduler) Tick(ctx context.Context, screening string, now time.Time) (TickResult, error) {
	started := time.Now()
	s.metrics.Runs.WithLabelValues(screening).Inc()
	res, err := s.tick(ctx, screening, now)
	s.metrics.TickSeconds.WithLabelValues(screening).Observe(time.Since(started).Seconds())
	if err != nil {
		s.metrics.Failures.WithLabelValues(screening).Inc()
		return res, err
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

func (s *Scheduler) tick(ctx context.Context, screening string, now time.Time) (TickResult, error) {
	tickNo := now.UnixMilli() / s.settings.Interval.Milliseconds()
	got, err := s.q.TryLock(ctx, screening, s.owner, tickNo, s.settings.LockTTL)
	if err != nil {
		return TickResult{Screening: screening, TickAt: now}, err
	}
	if !got {
		return TickResult{Screening: screening, TickAt: now, Skip: LockNotAcquired}, nil
	}
	defer func() {
		// Release even when ctx ended mid-tick, so a restarted instance does not wait out the TTL.
		if _, err := s.q.Unlock(context.WithoutCancel(ctx), screening, s.owner); err != nil {
			s.log.Warn("admission: unlock", "screening", screening, "err", err)
		}
	}()
	res, err := s.q.Admit(ctx, screening, now, s.settings)
	if err != nil {
		return res, err
	}
	if res.Moved {
		return res, s.publishTick(ctx, res)
	}
	return res, nil
}
