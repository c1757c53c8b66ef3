package queue

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Sale is one screening the scheduler runs admission for: when its line opens, and its own admission
// settings (a zero field takes the server's default).
type Sale struct {
	ID       string
	OpensAt  time.Time
	Settings Settings
	// Ended is true once the sale sold out or was closed: no admission runs, and its line is kept closed.
	Ended bool
}

// Screenings lists the screenings the scheduler should run admission for.
type Screenings interface {
	// Sales returns the screenings whose sale opens at or before until: those on sale, and those whose sale
	// ended (Sale.Ended) while their show is still to come.
	Sales(ctx context.Context, until time.Time) ([]Sale, error)
}

// refreshEvery is how often the scheduler reads the screenings again, so a new screening starts admitting
// at its sale time, and changed admission settings take effect, without a restart, on every instance.
const refreshEvery = 2 * time.Second

// Scheduler sets the pace: every screening on sale gets its own loop that ticks at wall-clock multiples of
// its interval, so one slow screening never delays another (the seed's single loop did). Across instances
// each tick runs once: the per-screening lock is taken per tick number. A loop starts shortly before the
// sale time and opens the line at it (Queue.Open).
type Scheduler struct {
	q        *Queue
	list     Screenings
	defaults Settings
	owner    string
	metrics  *Metrics
	log      *slog.Logger

	mu    sync.Mutex
	loops map[string]*loopState // screening -> its loop, while it runs

	refresh chan struct{} // Refresh's nudge to Run
}

// loopState is what others may see of a screening's loop: its settings and its wake-up.
type loopState struct {
	wake     chan struct{}
	settings atomic.Pointer[Settings]
	opensAt  atomic.Int64 // Unix ms
}

// NewScheduler returns a scheduler for the screenings list names, with defaults for the settings a
// screening leaves unset and owner as this instance's lock id.
func NewScheduler(q *Queue, list Screenings, defaults Settings, owner string, m *Metrics, log *slog.Logger) *Scheduler {
	return &Scheduler{q: q, list: list, defaults: defaults, owner: owner, metrics: m, log: log, loops: map[string]*loopState{}, refresh: make(chan struct{}, 1)}
}

// Refresh asks Run to read the screenings now rather than at its next refresh: the instance where an
// operator created a screening or changed its settings applies it at once (the others within refreshEvery).
func (s *Scheduler) Refresh() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// Settings returns the settings the screening's loop runs with on this instance, or the defaults when it
// has no loop here.
func (s *Scheduler) Settings(screening string) Settings {
	s.mu.Lock()
	l := s.loops[screening]
	s.mu.Unlock()
	if l == nil {
		return s.defaults
	}
	return *l.settings.Load()
}

// Run keeps one admission loop per screening on sale (or about to be) until ctx ends, and waits for them
// to stop. While it runs, a slot freed on its queue wakes the screening's loop (wake.go).
func (s *Scheduler) Run(ctx context.Context) error {
	s.q.addWaker(s)
	defer s.q.removeWaker(s)
	r := &running{stops: map[string]context.CancelFunc{}}
	defer r.stopAll()
	refresh := time.NewTicker(refreshEvery)
	defer refresh.Stop()
	for {
		s.refreshLoops(ctx, r)
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.C:
		case <-s.refresh:
		}
	}
}

// running is what one Run keeps of the loops it started: how to stop each, and how to wait for them all.
type running struct {
	stops map[string]context.CancelFunc // screening -> its loop's stop
	wg    sync.WaitGroup
}

// stopAll stops every loop and waits for them to return.
func (r *running) stopAll() {
	for _, stop := range r.stops {
		stop()
	}
	r.wg.Wait()
}

// refreshLoops reads the screenings and makes the loops follow them: a sale newly listed gets its loop, a
// running loop takes its sale's settings and sale time as they are now, a loop whose sale left the list
// stops, and an ended sale's line is kept closed. When the list cannot be read, the loops go on as they are.
func (s *Scheduler) refreshLoops(ctx context.Context, r *running) {
	// Loops start one refresh ahead of the sale time, so the line opens on time, not up to a refresh late.
	sales, err := s.list.Sales(ctx, time.Now().Add(2*refreshEvery))
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("admission: list screenings", "err", err)
		}
		return
	}
	listed := make(map[string]bool, len(sales))
	for _, sale := range sales {
		if sale.Ended {
			s.keepClosed(ctx, sale.ID)
			continue
		}
		listed[sale.ID] = true
		settings := sale.Settings.Merge(s.defaults)
		if !s.updateLoop(sale, settings) {
			s.startLoop(ctx, r, sale, settings)
		}
	}
	s.stopUnlisted(r, listed)
}

// updateLoop gives the sale's loop, if it has one here, the settings and sale time read now; it reports
// whether there was a loop.
func (s *Scheduler) updateLoop(sale Sale, settings Settings) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.loops[sale.ID]
	if l == nil {
		return false
	}
	if old := l.settings.Load(); *old != settings {
		s.log.Info("admission: settings changed", "screening", sale.ID, "interval", settings.Interval.String(),
			"batch_size", settings.BatchSize, "max_active", settings.MaxActive, "active_ttl", settings.ActiveTTL.String())
	}
	l.settings.Store(&settings)
	l.opensAt.Store(sale.OpensAt.UnixMilli())
	return true
}

// startLoop starts the sale's loop, which runs until r stops it.
func (s *Scheduler) startLoop(ctx context.Context, r *running, sale Sale, settings Settings) {
	l := &loopState{wake: make(chan struct{}, 1)}
	l.settings.Store(&settings)
	l.opensAt.Store(sale.OpensAt.UnixMilli())
	s.mu.Lock()
	s.loops[sale.ID] = l
	s.mu.Unlock()
	loopCtx, stop := context.WithCancel(ctx)
	r.stops[sale.ID] = stop
	r.wg.Go(func() { s.loop(loopCtx, sale.ID, l) })
	s.log.Info("admission: started", "screening", sale.ID, "opens_at", sale.OpensAt.UTC().Format(time.RFC3339),
		"interval", settings.Interval.String(), "batch_size", settings.BatchSize, "max_active", settings.MaxActive)
}

// stopUnlisted stops the loops whose sale is no longer listed (taken off sale, or ended).
func (s *Scheduler) stopUnlisted(r *running, listed map[string]bool) {
	for id, stop := range r.stops {
		if listed[id] {
			continue
		}
		stop()
		delete(r.stops, id)
		s.mu.Lock()
		delete(s.loops, id)
		s.mu.Unlock()
		s.log.Info("admission: stopped", "screening", id)
	}
}

// keepClosed makes sure the line of a sale that ended (sold out, or closed by the operator) is closed in
// Redis, or whoever still waits, or registers, would wait for good: the reservation that sold the last seat
// (or the operator) closed it, unless Redis was unreachable just then, or a restart without persistence
// forgot it since. One EXISTS per ended sale per refresh; a failed close is retried at the next.
func (s *Scheduler) keepClosed(ctx context.Context, screening string) {
	closed, err := s.q.Closed(ctx, screening)
	if err == nil && closed {
		return
	}
	if err == nil {
		err = s.q.Close(ctx, screening)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("admission: close the line of an ended sale; retrying", "screening", screening, "err", err)
	}
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
				if _, err := s.runTick(ctx, screening, now, settings); err != nil && ctx.Err() == nil {
					s.log.Error("admission: tick failed", "screening", screening, "err", err)
				}
			}
			timer.Reset(time.Until(nextTick(time.Now(), settings.Interval)))
		case <-l.wake:
			if !opened {
				continue
			}
			if _, err := s.Refill(ctx, screening, time.Now()); err != nil && ctx.Err() == nil {
				s.log.Error("admission: refill failed", "screening", screening, "err", err)
			}
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
		s.log.Info("admission: line opened", "screening", screening, "shuffled", o.Shuffled, "abandoned", o.Abandoned)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("admission: open", "screening", screening, "err", err)
		}
		return o.Opened, o.Opened // opened but not told: ticks go on, and instances catch up from the epoch gap
	}
	return true, o.Opened
}

// Refill admits into the slots freed since the last admission, now, and tells every instance.
func (s *Scheduler) Refill(ctx context.Context, screening string, now time.Time) (TickResult, error) {
	res, err := s.q.Refill(ctx, screening, now, s.Settings(screening))
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

// Tick runs one admission of screening at now with the settings its loop runs with (Settings): take the
// lock for this tick, admit, tell every instance, release the lock, count.
func (s *Scheduler) Tick(ctx context.Context, screening string, now time.Time) (TickResult, error) {
	return s.runTick(ctx, screening, now, s.Settings(screening))
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
	got, err := s.q.TryLock(ctx, screening, s.owner, tickNo, settings.LockTTL)
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
	res, err := s.q.Admit(ctx, screening, now, settings)
	if err != nil {
		return res, err
	}
	if res.Moved {
		return res, s.publishTick(ctx, res)
	}
	return res, nil
}
