// Package hub owns the sockets: it welcomes each one (registration, first message, catch-up), reads what
// its client sends, writes to it through a pool of writers shared by all connections, pings them all from
// one pinger, and fans the admission events of Redis (positions and passes) out to the sockets of this
// instance.
//
// Guarantees: one writer at a time writes to a connection; a client that cannot keep up is disconnected with
// a reason, never waited on; each admitted socket is sent its pass at once, once per admission, on whichever
// instance it is connected to; after each event that moved the line (admissions, joins, leaves) every
// waiting socket of the screening is sent its rank and the line's length, computed from the screening's
// queue.Line with no Redis call per socket, within the rank interval (at once when the last push is older):
// the rank in the newest line then.
//
// Where things are: hub.go (the Hub, its life and its sockets by screening), welcome.go (a socket's arrival:
// registration, first message, catch-up), client.go (one socket's send queue and close), read.go (its
// reader), writer.go (the writers), follow.go (a screening's subscription, its events and the rank pushes),
// rankpace.go (the pace of the rank pushes, hub.rank_interval),
// recover.go (missed events and lines Redis lost), health.go (the pinger and the Redis watch), trim.go
// (returning a burst's memory), pace.go (the wait estimate), message.go (the protocol's messages), bothold.go
// (the infinite queue: a socket the entry takes for a bot, held unregistered).
//
// Goroutines: Run owns the writers and their watchdog, the pinger, the Redis watch, the trimmer and one
// follower per screening with sockets here, and returns once they have ended. Each socket has one reader
// goroutine, started by Welcome and ended when its socket closes; Shutdown closes every socket and waits for
// them.
package hub

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/overload"
	"github.com/waitroom/waitroom/queue"
)

// Close codes the hub uses beyond RFC 6455's basics.
const (
	// CloseServiceRestart (1012) tells a client to reconnect, keeping its token: the instance is draining.
	CloseServiceRestart = 1012
	// CloseTryAgainLater (1013) tells a client the server cannot serve it now.
	CloseTryAgainLater = 1013
)

// redisTimeout bounds a Redis call the hub makes on its own (a registration's undo, a count-off, reading a
// line after a missed event).
const redisTimeout = 5 * time.Second

// Lines is where the hub registers its sockets and learns how each screening's line moves: a subscription
// to its admission events, the line read whole when an event was missed, and one token's standing.
type Lines interface {
	// Enter registers a socket of token (a new token when empty) in the screening's line, or finds where it
	// stands (queue.Queue.Enter); Undo undoes a registration that got no answer.
	Enter(ctx context.Context, screening, token string, opensAt time.Time) (queue.Entry, error)
	Undo(ctx context.Context, screening string, e queue.Entry) error
	Subscribe(ctx context.Context, screening string, fn func(context.Context, queue.Event), subscribed func(context.Context), recheck <-chan struct{}) error
	// Epoch is the number of the screening's last event in Redis: a cheap check for an event this instance
	// never received (its publisher died before publishing, or the message was lost).
	Epoch(ctx context.Context, screening string) (int64, error)
	Line(ctx context.Context, screening string) (queue.Line, error)
	Status(ctx context.Context, screening, token string) (queue.Entry, error)
	// Seqs returns each token's sequence number in the line (0 for one not in it): once per opening, for
	// the sockets that waited in the pre-queue.
	Seqs(ctx context.Context, screening string, tokens []string) ([]int64, queue.Numbering, error)
	// Disconnected counts off a socket of the token, so a waiting token whose sockets are all gone past the
	// grace is dropped as abandoned.
	Disconnected(ctx context.Context, screening, token string) error
	// Ping reports whether Redis answers (the hub tells its sockets when it stops and starts again).
	Ping(ctx context.Context) error
	// Restore rebuilds a line Redis lost from what this instance's sockets know (see queue.Restore).
	Restore(ctx context.Context, screening string, standings []queue.Standing) (queue.Line, int64, error)
}

// Passes signs the pass of an admission.
type Passes interface {
	Issue(screening, token string, expiresAt time.Time) (string, error)
	// IssueOffer signs the pass of a waitlist's offer of seats.
	IssueOffer(screening, token string, expiresAt time.Time, seats int) (string, error)
}

// Leaver takes a token out of a screening when its client says {"type":"leave"}.
type Leaver interface {
	Leave(ctx context.Context, screening, token string) (bool, error)
}

// Hub holds this instance's sockets, grouped by screening.
type Hub struct {
	lines    Lines
	passes   Passes
	receipts Receipts // signs the receipts of places (SetReceipts); nil: none
	leaver   Leaver
	log      *slog.Logger
	sockets  prometheus.Gauge
	resyncs  prometheus.Counter
	trims    prometheus.Counter

	// churn counts the sockets that joined or left, for the trimmer (trim.go), which looks at it every
	// trimEvery and returns a burst's memory once trimBurst of them came and went.
	churn     atomic.Int64
	trimEvery time.Duration
	trimBurst int
	// pingEvery is pingPeriod; tests shorten it.
	pingEvery time.Duration
	// rankEvery is the least time between two rank pushes to a screening (SetRankInterval; 0: every
	// event); clock and afterFunc time them (time.Now and time.AfterFunc; a test takes each step itself).
	rankEvery time.Duration
	clock     func() time.Time
	afterFunc func(time.Duration, func())
	// Test seams, nil in production: pingSteps and trimLooks stand in for the pinger's and the trimmer's
	// tickers (a pingSteps value is the time since the pinger started), and trimLooked is called after
	// each of the trimmer's looks, so a test takes each step itself and counts exact events.
	pingSteps  <-chan time.Duration
	trimLooks  <-chan time.Time
	trimLooked func()

	mu          sync.Mutex
	byScreening map[string]map[*client]struct{} // each screening's sockets here
	following   map[string]*followed            // the screenings whose events this hub follows
	unstarted   []string                        // followed screenings whose follower Run has not started yet
	draining    bool
	nextSlice   uint8 // the ping slice of the next socket to join: round robin
	// hellos are the sockets waiting for their hello (welcome.go), woken when the hub drains; helloWait is
	// how long they wait (helloWait; tests shorten it).
	hellos    map[*websocket.Conn]struct{}
	helloWait time.Duration

	// handshakes bounds the sockets registering at once (SetHandshakes; nil: no bound); retryAfter is what
	// a socket refused a slot is told to wait.
	handshakes *overload.Gate
	retryAfter time.Duration

	// toFollow nudges Run to start the followers listed in unstarted.
	toFollow chan struct{}
	// serving counts the sockets' readers; Shutdown and Run's end wait for them.
	serving sync.WaitGroup

	writers writers
}

// New returns an empty hub; its background work runs in Run.
func New(lines Lines, passes Passes, l Leaver, reg prometheus.Registerer, log *slog.Logger) *Hub {
	h := &Hub{
		lines: lines, passes: passes, leaver: l, log: log,
		byScreening: map[string]map[*client]struct{}{}, following: map[string]*followed{}, toFollow: make(chan struct{}, 1),
		trimEvery: trimEvery, trimBurst: trimBurst, pingEvery: pingPeriod, helloWait: helloWait,
		clock: time.Now, afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "waitroom", Subsystem: "hub", Name: "sockets", Help: "Open WebSocket connections on this instance."}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "hub", Name: "line_reads_total", Help: "Lines read whole from Redis: at a subscription's start and after a missed event."}),
		trims:   prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "hub", Name: "memory_returns_total", Help: "Forced collections that handed a burst of sockets' memory back to the OS once the burst was over."}),
	}
	reg.MustRegister(h.sockets, h.resyncs, h.trims)
	return h
}

// Run does the hub's background work until ctx ends: the writers and their watchdog, the pinger, the Redis
// watch, the trimmer, and a follower for each screening a socket here joined (or Follow asked for). Call
// Shutdown before ending ctx to drain the sockets gracefully; any socket still open when ctx ends is closed
// without a close frame. Run returns once all of it, and every socket's reader, has stopped.
func (h *Hub) Run(ctx context.Context) error {
	h.writers.start()
	var wg sync.WaitGroup
	goOwned := func(f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	goOwned(h.pinger)
	goOwned(h.watchRedis)
	goOwned(h.trimmer)
	for ctx.Err() == nil {
		for _, f := range h.takeUnstarted() {
			goOwned(func(ctx context.Context) { h.follow(ctx, f) })
		}
		select {
		case <-ctx.Done():
		case <-h.toFollow:
		}
	}
	wg.Wait()
	h.mu.Lock()
	h.draining = true
	h.wakeHellosLocked()
	h.mu.Unlock()
	for _, c := range h.allClients() {
		_ = c.conn.Close() // Shutdown was not called, or gave up: the readers end at once
	}
	h.serving.Wait()
	h.writers.stop()
	return nil
}

// takeUnstarted returns the followed screenings whose follower is still to start, and forgets them.
func (h *Hub) takeUnstarted() []*followed {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*followed, 0, len(h.unstarted))
	for _, id := range h.unstarted {
		out = append(out, h.following[id])
	}
	h.unstarted = h.unstarted[:0]
	return out
}

// Follow makes the hub follow the screening's events (as the first socket of a screening does) and waits
// until the subscription is in place and the line read, or ctx ends.
func (h *Hub) Follow(ctx context.Context, screening string) error {
	h.mu.Lock()
	f := h.followLocked(screening)
	h.mu.Unlock()
	select {
	case <-f.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// followLocked returns the screening's followed state, listing a new one for Run to start its follower.
func (h *Hub) followLocked(screening string) *followed {
	f := h.following[screening]
	if f == nil {
		f = newFollowed(screening)
		h.following[screening] = f
		h.unstarted = append(h.unstarted, screening)
		select {
		case h.toFollow <- struct{}{}:
		default: // a nudge is pending already
		}
	}
	return f
}

// join adds a socket to the hub; seq is the token's sequence number when it is waiting (0 in the pre-queue
// or admitted) and numbering the numbering it is of, paused whether its first message (may be nil) says
// admission is paused. It returns nil (and rejects the socket with 1012) when the hub is draining. The
// caller then serves it (serve).
func (h *Hub) join(conn *websocket.Conn, screening, token string, seq int64, numbering queue.Numbering, paused bool, first []byte) *client {
	c := newClient(h, conn, screening, token, seq, numbering, paused)
	h.mu.Lock()
	if h.draining {
		h.mu.Unlock()
		Reject(conn, nil, CloseServiceRestart, "server restarting")
		return nil
	}
	set := h.byScreening[screening]
	if set == nil {
		set = map[*client]struct{}{}
		h.byScreening[screening] = set
	}
	set[c] = struct{}{}
	c.pingSlice, h.nextSlice = h.nextSlice, (h.nextSlice+1)%pingSlices
	h.serving.Add(1)
	pause := h.followLocked(screening).pause.Load()
	h.mu.Unlock()
	h.sockets.Inc()
	h.churn.Add(1)
	if first != nil {
		c.send(first)
	}
	if pause != pauseUnknown {
		c.tellPaused(pause == pausePaused) // a pause or resume dispatched between registering and joining
	}
	return c
}

// remove takes a client whose socket is gone out of its screening's set.
func (h *Hub) remove(c *client) {
	h.mu.Lock()
	if set := h.byScreening[c.screening]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(h.byScreening, c.screening)
		}
	}
	h.mu.Unlock()
	h.sockets.Dec()
	h.churn.Add(1)
}

func (h *Hub) clients(screening string) []*client {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.byScreening[screening]
	out := make([]*client, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	return out
}

// allClients lists every socket of the hub.
func (h *Hub) allClients() []*client {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []*client
	for _, set := range h.byScreening {
		for c := range set {
			all = append(all, c)
		}
	}
	return all
}

// Counts returns the hub's open sockets by screening.
func (h *Hub) Counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.byScreening))
	for id, set := range h.byScreening {
		out[id] = len(set)
	}
	return out
}

// Shutdown stops taking sockets, closes every open one with 1012 (reconnect with your token), and waits
// for their readers to end or ctx to end. Run must still be running: the close frames go out through its
// writers.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.draining = true
	h.wakeHellosLocked()
	h.mu.Unlock()
	for _, c := range h.allClients() {
		c.close(CloseServiceRestart, "server restarting: reconnect with your token")
	}
	done := make(chan struct{})
	go func() {
		h.serving.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
