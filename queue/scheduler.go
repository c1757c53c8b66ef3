// The Scheduler: one admission loop per screening on sale, started, updated and stopped as the list of
// screenings changes (Run), and the lines of ended sales kept closed.

package queue

import (
	"context"
	"log/slog"
	"sync"
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
	// Closed is true when the operator closed the sale (not sold out): its line is kept closed for that
	// reason, so a socket is told the sale is closed, not sold out.
	Closed bool
	// Paused is true while the operator has paused its admission: its line is kept paused.
	Paused bool
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

	offerHook func(ctx context.Context, screening string, news []OfferNews) // SetOfferHook; nil: none
	admitHook func(ctx context.Context, res TickResult)                     // SetAdmitHook; nil: none
}

// SetAdmitHook has the admission loops hand every admission that admitted someone (a tick, a refill, a
// waitlist's offer round) to hook, after it was published, on the loop's goroutine: keep it short. Set
// before Run.
func (s *Scheduler) SetAdmitHook(hook func(ctx context.Context, res TickResult)) {
	s.admitHook = hook
}

// admitted hands res to the admit hook when it admitted someone.
func (s *Scheduler) admitted(ctx context.Context, res TickResult) {
	if s.admitHook != nil && len(res.Admitted) > 0 {
		s.admitHook(ctx, res)
	}
}

// SetOfferHook has the admission loops of waitlisted screenings hand what happened to their offers
// (offered, expired, taken) to hook after each admission, in order, each piece of news to one instance.
// Set before Run.
func (s *Scheduler) SetOfferHook(hook func(ctx context.Context, screening string, news []OfferNews)) {
	s.offerHook = hook
}

// offerNews hands the screening's offer news to the hook, when it keeps a waitlist.
func (s *Scheduler) offerNews(ctx context.Context, screening string, settings Settings) {
	if s.offerHook == nil || !settings.Waitlist {
		return
	}
	for range 10 { // at most 10 × 500 at once; the rest at the next admission
		news, err := s.q.TakeOfferNews(ctx, screening, 500)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("admission: offer news", "screening", screening, "err", err)
			}
			return
		}
		if len(news) == 0 {
			return
		}
		s.offerHook(ctx, screening, news)
	}
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

// settingsOf returns the settings the screening's loop runs with on this instance, or the defaults when it
// has no loop here.
func (s *Scheduler) settingsOf(screening string) Settings {
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
			s.keepClosed(ctx, sale.ID, sale.Closed, sale.Settings.Waitlist)
			continue
		}
		listed[sale.ID] = true
		if sale.Paused {
			s.keepPaused(ctx, sale.ID)
		}
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

// keepPaused makes sure the line of a sale the operator paused is paused in Redis, which a restart without
// persistence forgets: the pause is back within a refresh, before the rebuilt line admits anyone
// (rebuildHold). A line resumed a moment ago is left alone: the list may have been read before the resume.
func (s *Scheduler) keepPaused(ctx context.Context, screening string) {
	paused, err := s.q.pausedOrResumed(ctx, screening)
	if err == nil && !paused {
		err = s.q.Pause(ctx, screening)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("admission: pause the line of a paused sale; retrying", "screening", screening, "err", err)
	}
}

// keepClosed makes sure the line of a sale that ended (sold out, or closed by the operator) is closed in
// Redis, or whoever still waits, or registers, would wait for good: the reservation that sold the last seat
// (or the operator) closed it, unless Redis was unreachable just then, or a restart without persistence
// forgot it since. One EXISTS per ended sale per refresh; a failed close is retried at the next.
//
// A line reopened a moment ago (a refund after the sell-out) is left open: the list that said the sale
// ended may have been read before the refund.
func (s *Scheduler) keepClosed(ctx context.Context, screening string, byOperator, waitlist bool) {
	closed, err := s.q.Closed(ctx, screening)
	if err == nil && closed {
		return
	}
	if err == nil && s.q.reopenedLately(ctx, screening) {
		return
	}
	if err == nil && byOperator {
		err = s.q.CloseSale(ctx, screening)
	} else if err == nil {
		_, err = s.q.SellOut(ctx, screening, waitlist)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("admission: close the line of an ended sale; retrying", "screening", screening, "err", err)
	}
}
