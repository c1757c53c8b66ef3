// Package hub owns the sockets: a pool of writers shared by all connections (writer.go), bounded send
// buffers, one pinger for all, read deadlines, and the fan-out of admission events (positions and passes) to
// the sockets of this instance.
//
// Guarantees: one writer at a time writes to a connection; a client that cannot keep up is disconnected with
// a reason, never waited on; after each event that moved the line (admissions, joins, leaves) every waiting
// socket of the screening is sent its rank and the line's length, computed from the screening's queue.Line
// with no Redis call per socket, and each admitted one its pass, once per admission, on whichever instance
// it is connected to.
package hub

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/waitroom/waitroom/queue"
	"golang.org/x/time/rate"
)

const (
	// writeWait bounds one flush of a socket's queued messages (the writers' watchdog, writer.go).
	writeWait = 10 * time.Second
	// pongWait is how long a socket may stay silent (no pong, no message) before it is dropped.
	pongWait = 60 * time.Second
	// pingPeriod sends pings often enough that a live peer's pong always beats pongWait.
	pingPeriod = pongWait * 9 / 10
	// pingSlices is how many parts the pinger spreads the pings of a pingPeriod over (pinger).
	pingSlices = 54
	// maxMessageSize bounds a client frame: the protocol's client messages are tiny.
	maxMessageSize = 512
	// sendBuffer is how many messages may wait for a socket before it counts as too slow.
	sendBuffer = 16
	// redisTimeout bounds a Redis call the hub makes on its own (reading a line after a missed event).
	redisTimeout = 5 * time.Second
	// resubscribeEvery paces the retries of a screening's subscription after Redis refused or dropped it.
	resubscribeEvery = time.Second
	// healthEvery paces the hub's Redis check; healthTimeout bounds one.
	healthEvery   = time.Second
	healthTimeout = time.Second
	// messagesPerSecond and messageBurst bound what one client may send: the protocol's only client message
	// is a leave, so a socket past them is a bot or a bug, and is closed with 1008.
	messagesPerSecond = 5
	messageBurst      = 10
	// maxBadMessages is how many malformed or unknown messages a socket may send: the first is answered with
	// an error message, the next closes the socket with 1008.
	maxBadMessages = 2
)

// Close codes the hub uses beyond RFC 6455's basics.
const (
	// CloseServiceRestart (1012) tells a client to reconnect, keeping its token: the instance is draining.
	CloseServiceRestart = 1012
	// CloseTryAgainLater (1013) tells a client the server cannot serve it now.
	CloseTryAgainLater = 1013
)

// Lines is where the hub learns how each screening's line moves: a subscription to its admission events,
// the line read whole when an event was missed, and one token's standing to recover a missed admission.
type Lines interface {
	Subscribe(ctx context.Context, screening string, fn func(context.Context, queue.Event), subscribed func(context.Context), recheck <-chan struct{}) error
	// Epoch is the number of the screening's last event in Redis: a cheap check for an event this instance
	// never received (its publisher died before publishing, or the message was lost).
	Epoch(ctx context.Context, screening string) (int64, error)
	Line(ctx context.Context, screening string) (queue.Line, error)
	Status(ctx context.Context, screening, token string) (queue.Entry, error)
	// Seqs returns each token's sequence number in the line (0 for one not in it): once per opening, for
	// the sockets that waited in the pre-queue.
	Seqs(ctx context.Context, screening string, tokens []string) ([]int64, error)
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
}

// Leaver takes a token out of a screening when its client says {"type":"leave"}.
type Leaver interface {
	Leave(ctx context.Context, screening, token string) (bool, error)
}

// Hub holds this instance's sockets, grouped by screening.
type Hub struct {
	lines   Lines
	passes  Passes
	leaver  Leaver
	log     *slog.Logger
	sockets prometheus.Gauge
	resyncs prometheus.Counter
	trims   prometheus.Counter

	// churn counts the sockets that joined or left, for the trimmer (trim.go), which looks at it every
	// trimEvery and returns a burst's memory once trimBurst of them came and went.
	churn     atomic.Int64
	trimEvery time.Duration
	trimBurst int

	// ctx lives until Shutdown: the screenings' subscriptions run under it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	rooms     map[string]map[*Client]struct{}
	following map[string]*followed // the screenings whose events this hub follows
	draining  bool
	serving   sync.WaitGroup // one per Serve call; Shutdown waits for them
	follows   sync.WaitGroup // one per followed screening, the pinger, the Redis watch and the trimmer
	pinging   bool
	nextSlice uint8 // the ping slice of the next socket to join: round robin

	// pingEvery is pingPeriod; tests shorten it.
	pingEvery time.Duration

	writers writers
}

// New returns an empty hub; sockets counts its open sockets.
func New(lines Lines, passes Passes, l Leaver, reg prometheus.Registerer, log *slog.Logger) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		lines: lines, passes: passes, leaver: l, log: log, ctx: ctx, cancel: cancel,
		rooms: map[string]map[*Client]struct{}{}, following: map[string]*followed{},
		trimEvery: trimEvery, trimBurst: trimBurst, pingEvery: pingPeriod,
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "waitroom", Subsystem: "hub", Name: "sockets", Help: "Open WebSocket connections on this instance."}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "hub", Name: "line_reads_total", Help: "Lines read whole from Redis: at a subscription's start and after a missed event."}),
		trims:   prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "hub", Name: "memory_returns_total", Help: "Forced collections that handed a burst of sockets' memory back to the OS once the burst was over."}),
	}
	reg.MustRegister(h.sockets, h.resyncs, h.trims)
	return h
}

// Client is one socket of one token in one screening.
type Client struct {
	hub       *Hub
	conn      *websocket.Conn
	screening string
	token     string
	// seq is the token's sequence number while waiting (queue.Line); 0 in the pre-queue (until the opening
	// gives it one) or when it joined admitted.
	seq atomic.Int64

	pingSlice uint8 // which of the pinger's pingSlices pings it (pinger)

	mu         sync.Mutex
	out        []outMsg // messages queued for the socket, at most sendBuffer
	spare      []outMsg // out's previous backing array, reused
	scheduled  bool     // in the writers' queue or being written (writer.go)
	pendingPos int      // index in out of a queued position a newer one may replace; -1 when none
	pingDue    bool
	pongDue    bool // a pong answering the peer's last ping is to be written, with pong as its payload
	pong       []byte
	closed     bool
	closeCode  int
	closeText  string
	linger     bool   // the reader closes the connection after the close frame (closeRead), not the writer
	toldPaused bool   // whether the client was last told admission is paused
	admittedMs int64  // expiry of the admission whose pass was sent; 0 while waiting
	ticks      uint64 // tick messages (positions, passes) queued so far
}

// Token is the queue token the client holds.
func (c *Client) Token() string { return c.token }

// Reject writes msg and a close frame to a socket that never joined the hub, then closes it. The caller is
// the socket's only writer.
func Reject(conn *websocket.Conn, msg []byte, code int, reason string) {
	_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
	if msg != nil {
		_ = conn.WriteMessage(websocket.TextMessage, msg)
	}
	_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason))
	_ = conn.Close()
}

// Join adds a socket to the hub; seq is the token's sequence number when it is
// waiting (0 in the pre-queue or admitted), paused whether its first message (may be nil) says admission is
// paused. It returns nil (and rejects the socket with
// 1012) when the hub is draining. The caller then calls Serve (or Start).
func (h *Hub) Join(conn *websocket.Conn, screening, token string, seq int64, paused bool, first []byte) *Client {
	c := &Client{hub: h, conn: conn, screening: screening, token: token, pendingPos: -1, toldPaused: paused}
	c.seq.Store(seq)
	h.mu.Lock()
	if h.draining {
		h.mu.Unlock()
		Reject(conn, nil, CloseServiceRestart, "server restarting")
		return nil
	}
	room := h.rooms[screening]
	if room == nil {
		room = map[*Client]struct{}{}
		h.rooms[screening] = room
	}
	room[c] = struct{}{}
	c.pingSlice, h.nextSlice = h.nextSlice, (h.nextSlice+1)%pingSlices
	h.serving.Add(1)
	h.followLocked(screening)
	pause := pauseUnknown
	if f := h.following[screening]; f != nil {
		pause = f.pause.Load()
	}
	h.mu.Unlock()
	h.sockets.Inc()
	h.churn.Add(1)
	if first != nil {
		c.Send(first)
	}
	if pause != pauseUnknown {
		c.tellPaused(pause == pausePaused) // a pause or resume dispatched between registering and joining
	}
	return c
}

// Start serves the client (Serve) on a goroutine of the hub's own, so the HTTP handler that upgraded the
// socket can return and its deep stack be freed: an idle socket then costs one small reading goroutine.
// done, when not nil, runs once the socket is gone.
func (h *Hub) Start(c *Client, done func()) {
	go func() {
		h.Serve(h.ctx, c)
		if done != nil {
			done()
		}
	}()
}

// Serve reads the client's messages until the socket closes, then removes it from the hub.
//
// An idle socket's goroutine waits here, nearly always inside NextReader, so this frame is kept small and the
// handling of a message is in handle. Go halves a goroutine's stack at a collection only while less than a
// quarter of it is in use, and a reader that starts on the 8 KiB stack a registration burst makes the
// default (GODEBUG adaptivestackstart) waits in under 2 KiB this way, so its stack shrinks to 4 KiB; with the
// handling inline it waited in 2.1 KiB and kept 8 KiB: 155 MB at 19,000 sockets instead of 79 MB
// (docs/benchmarks.md).
func (h *Hub) Serve(ctx context.Context, c *Client) {
	defer h.serving.Done()
	defer h.leave(c)
	c.prepareRead()
	var st readState
	for {
		_, r, err := c.conn.NextReader()
		if !h.handle(ctx, c, r, err, &st) {
			return
		}
	}
}

// readState is what a socket's reader remembers between messages. The limiter is made at the first
// message: most sockets never send one, and an idle socket should cost little.
type readState struct {
	limiter *rate.Limiter
	bad     int
}

// prepareRead sets the socket's read limit and deadline, and has gorilla's reader queue its answers to a
// ping and to a close instead of writing them: the writers are the connection's only writers (flush).
//
//go:noinline
func (c *Client) prepareRead() {
	c.conn.SetReadLimit(maxMessageSize)
	_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	c.conn.SetPingHandler(func(data string) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.closed {
			c.pongDue, c.pong = true, []byte(data) // RFC 6455 §5.5.3: answering only the latest ping will do
			c.scheduleLocked()
		}
		return nil
	})
	c.conn.SetCloseHandler(func(code int, _ string) error {
		c.Close(code, "") // echo the peer's code, as gorilla's own handler would; the writer then closes
		return nil
	})
}

// handle acts on one client message (r, or the read error err) and tells whether to go on reading.
//
//go:noinline
func (h *Hub) handle(ctx context.Context, c *Client, r io.Reader, err error, st *readState) bool {
	var data []byte
	if err == nil {
		data, err = io.ReadAll(r)
	}
	if err != nil {
		if err == websocket.ErrReadLimit {
			c.closeRead(websocket.CloseMessageTooBig, "message too big", true)
		}
		return false
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
	if st.limiter == nil {
		st.limiter = rate.NewLimiter(messagesPerSecond, messageBurst)
	}
	if !st.limiter.Allow() {
		c.Send(ErrorMessage("TOO_MANY_MESSAGES", "more messages than the protocol needs; reconnect with your token"))
		c.closeRead(websocket.ClosePolicyViolation, "too many messages", false)
		return false
	}
	in, err := DecodeInbound(data)
	if err != nil {
		c.Send(ErrorMessage("BAD_MESSAGE", err.Error()))
		if st.bad++; st.bad >= maxBadMessages {
			c.closeRead(websocket.ClosePolicyViolation, "repeated bad messages", false)
			return false
		}
		return true
	}
	_ = in // a leave: the only message there is
	if _, err := h.leaver.Leave(ctx, c.screening, c.token); err != nil {
		h.log.Error("hub: leave", "screening", c.screening, "err", err)
		c.Send(ErrorMessage("UNAVAILABLE", "could not leave the line; try again"))
		return true
	}
	c.Close(websocket.CloseNormalClosure, "left")
	return true
}

// closeWait bounds how long a socket the server closed is read (and discarded) for the peer's answer.
const closeWait = time.Second

// closeRead closes a socket from its reader while the peer is still sending: the close frame is queued
// as by Close, then what the peer sends is read and dropped until it answers the close or closeWait passes,
// and only then is the connection closed. Closed at once with unread data in it, TCP would reset the
// connection, and the peer would lose the close frame that says why. readerFailed says gorilla refuses
// every further read (after a frame over the read limit): the rest of the peer's frame and whatever follows
// is then read from the connection itself, until the peer closes or closeWait passes.
func (c *Client) closeRead(code int, reason string, readerFailed bool) {
	c.mu.Lock()
	if !c.closed {
		c.linger = true
	}
	c.closeLocked(code, reason)
	c.mu.Unlock()
	if readerFailed {
		raw := c.conn.UnderlyingConn()
		_ = raw.SetReadDeadline(time.Now().Add(closeWait))
		_, _ = io.Copy(io.Discard, raw)
	} else {
		_ = c.conn.SetReadDeadline(time.Now().Add(closeWait))
		for {
			if _, _, err := c.conn.NextReader(); err != nil {
				break
			}
		}
	}
	_ = c.conn.Close()
}

func (h *Hub) leave(c *Client) {
	c.Close(websocket.CloseNormalClosure, "")
	// Counted off in Redis, so a waiting user who never comes back stops costing an admission after the
	// grace (an admitted one's count is just dropped).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), redisTimeout)
	if err := h.lines.Disconnected(ctx, c.screening, c.token); errors.Is(err, queue.ErrQueued) {
		// A mass close (a drain, a crowd leaving at once) outran the wait; the count-off still goes out.
		h.log.Debug("hub: disconnect still queued", "screening", c.screening)
	} else if err != nil {
		h.log.Warn("hub: disconnect", "screening", c.screening, "err", err)
	}
	cancel()
	h.mu.Lock()
	if room := h.rooms[c.screening]; room != nil {
		delete(room, c)
		if len(room) == 0 {
			delete(h.rooms, c.screening)
		}
	}
	h.mu.Unlock()
	h.sockets.Dec()
	h.churn.Add(1)
}

// Send queues msg for the client. A client whose buffer is full is too slow: it is disconnected (it can
// reconnect with its token and keeps its place) rather than waited on.
func (c *Client) Send(msg []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendLocked(msg)
}

// Place gives a client that joined in the pre-queue its sequence number in the opened line, unless the
// hub placed it already.
func (c *Client) Place(seq int64) { c.seq.CompareAndSwap(0, seq) }

// Mark stamps the tick messages queued so far, for SendUnlessTicked.
func (c *Client) Mark() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ticks
}

// SendUnlessTicked queues msg only if no tick message was queued since mark: a catch-up computed before a
// tick must not arrive after that tick's newer news.
func (c *Client) SendUnlessTicked(mark uint64, msg []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ticks != mark {
		return false
	}
	return c.sendLocked(msg)
}

func (c *Client) sendTick(msg []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticks++
	return c.sendLocked(msg)
}

// outMsg is one message queued for a socket: the bytes of the message, or, for a position, the tick's
// ranks and the socket's rank in them, from which the writer renders it (so a tick allocates nothing per
// socket). The rank is taken when the position is queued, from the socket's number then: a rebuild may
// renumber the socket before the writer comes.
type outMsg struct {
	data []byte
	pos  *ranks
	rank int64
}

// ranks is what a tick tells every waiting socket, shared by all of them and never changed once made: the
// line after the tick, the tick's time and the admission rate for the estimate.
type ranks struct {
	line     queue.Line // Head, LastSeq, Total and its own copy of Left
	tickAtMs int64
	rate     paceRate
}

func newRanks(line *queue.Line, tickAtMs int64, rate paceRate) *ranks {
	return &ranks{
		line:     queue.Line{Head: line.Head, LastSeq: line.LastSeq, Total: line.Total, Left: slices.Clone(line.Left)},
		tickAtMs: tickAtMs, rate: rate,
	}
}

// appendFrame appends the text frame of the position of the socket of zero-based rank.
func (r *ranks) appendFrame(b []byte, rank int64) []byte {
	start := len(b)
	b = append(b, 0x80|websocket.TextMessage, 0) // the length byte is set below: a position is short
	b = appendPosition(b, rank, r.line.Total, r.tickAtMs, etaSeconds(rank+1, r.rate))
	if n := len(b) - start - 2; n < 126 {
		b[start+1] = byte(n)
		return b
	}
	payload := slices.Clone(b[start+2:]) // never at today's sizes; kept correct for any
	return appendFrame(b[:start], websocket.TextMessage, payload)
}

// sendPosition queues the position of the client, of zero-based rank, after the tick r, replacing one still
// unsent: a newer position supersedes an older one, so a socket that falls behind during a burst is sent
// where it stands now rather than dropped for a backlog of stale ranks (and does not come back to reconnect
// into the burst).
func (c *Client) sendPosition(r *ranks, rank int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticks++
	if c.closed || c.admittedMs != 0 {
		return false // an admitted socket hears no more of the line
	}
	if c.pendingPos >= 0 && c.pendingPos < len(c.out) {
		c.out[c.pendingPos] = outMsg{pos: r, rank: rank}
		return true
	}
	i := len(c.out)
	if !c.queueLocked(outMsg{pos: r, rank: rank}) {
		return false
	}
	c.pendingPos = i
	return true
}

func (c *Client) sendLocked(msg []byte) bool {
	return c.queueLocked(outMsg{data: msg})
}

func (c *Client) queueLocked(m outMsg) bool {
	if c.closed {
		return false
	}
	if len(c.out) >= sendBuffer {
		c.out = nil // what it has not read is stale by now; the close frame goes first
		c.closeLocked(CloseTryAgainLater, "too slow: reconnect with your token")
		return false
	}
	c.pendingPos = -1 // order matters from here on: a later position must not overwrite one before m
	c.out = append(c.out, m)
	c.scheduleLocked()
	return true
}

func (c *Client) scheduleLocked() {
	if !c.scheduled {
		c.scheduled = true
		c.hub.writers.schedule(c)
	}
}

// ping queues a ping, unless the client is closing.
func (c *Client) ping() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.pingDue = true
		c.scheduleLocked()
	}
}

// Close sends the close frame after what is already queued, then closes the socket. Later calls do nothing.
func (c *Client) Close(code int, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(code, reason)
}

func (c *Client) closeLocked(code int, reason string) {
	if c.closed {
		return
	}
	c.closed, c.closeCode, c.closeText = true, code, reason
	c.scheduleLocked()
}

// Admit sends the pass of the admission that lapses at expiresAt, unless this client already got it.
func (c *Client) Admit(expiresAt time.Time) {
	c.mu.Lock()
	sent := c.admittedMs == expiresAt.UnixMilli()
	c.admittedMs = expiresAt.UnixMilli()
	c.mu.Unlock()
	if sent {
		return
	}
	pass, err := c.hub.passes.Issue(c.screening, c.token, expiresAt)
	if err != nil {
		c.hub.log.Error("hub: issue pass", "screening", c.screening, "err", err)
		c.Send(ErrorMessage("INTERNAL", "internal error"))
		return
	}
	c.sendTick(AdmittedMessage(c.token, pass, expiresAt))
}

func (c *Client) admitted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.admittedMs != 0
}

func (h *Hub) clients(screening string) []*Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	room := h.rooms[screening]
	out := make([]*Client, 0, len(room))
	for c := range room {
		out = append(out, c)
	}
	return out
}

// Counts returns the hub's open sockets by screening.
func (h *Hub) Counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.rooms))
	for id, room := range h.rooms {
		out[id] = len(room)
	}
	return out
}

// allClients lists every socket of the hub.
func (h *Hub) allClients() []*Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []*Client
	for _, room := range h.rooms {
		for c := range room {
			all = append(all, c)
		}
	}
	return all
}

// Follow makes the hub follow the screening's events (as the first socket of a screening does) and waits
// until the subscription is in place and the line read, or ctx ends.
func (h *Hub) Follow(ctx context.Context, screening string) error {
	h.mu.Lock()
	ready := h.followLocked(screening)
	h.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// followed is a screening this hub follows.
type followed struct {
	ready chan struct{} // closed once subscribed and the line read
	// seen is the newest event epoch whose dispatch began (see Missed). Only the screening's subscription
	// goroutine writes it.
	seen atomic.Int64
	// pace is the screening's measured admission rate, for the wait estimates. Only the subscription
	// goroutine touches it.
	pace pace
	// recheck asks the subscription goroutine to read the line whole (watchRedis found an event missing).
	recheck chan struct{}
	// missing is an epoch Redis had that this hub had not dispatched at watchRedis's last check (0: none).
	// Only watchRedis touches it.
	missing int64
	// pause is the operator's pause as the hub last learnt it (pauseUnknown until the line is first read).
	// The subscription goroutine writes it before it lists the sockets, and Join reads it after adding one,
	// so a socket joining during a pause or resume is told either way (see tellPaused).
	pause atomic.Int32
}

// The values of followed.pause.
const (
	pauseUnknown int32 = iota
	pauseRunning
	pausePaused
)

func pauseOf(paused bool) int32 {
	if paused {
		return pausePaused
	}
	return pauseRunning
}

// setPause records the screening's pause and, when it changed or every client must be checked (all),
// tells the clients that were told otherwise.
func (h *Hub) setPause(f *followed, screening string, paused, all bool) {
	if f == nil {
		return
	}
	if old := f.pause.Swap(pauseOf(paused)); old == pauseOf(paused) && !all {
		return
	}
	for _, c := range h.clients(screening) {
		c.tellPaused(paused)
	}
}

// tellPaused sends paused or resumed to a waiting client told otherwise so far.
func (c *Client) tellPaused(paused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admittedMs != 0 || c.toldPaused == paused {
		return
	}
	c.toldPaused = paused
	c.sendLocked(PausedMessage(paused))
}

func (h *Hub) followLocked(screening string) <-chan struct{} {
	if !h.pinging && h.ctx.Err() == nil {
		h.pinging = true
		h.follows.Add(3)
		go h.pinger()
		go h.watchRedis()
		go h.trimmer()
	}
	f := h.following[screening]
	if f == nil {
		if h.ctx.Err() != nil {
			return nil
		}
		f = &followed{ready: make(chan struct{}), recheck: make(chan struct{}, 1)}
		f.seen.Store(math.MaxInt64) // until the line is read: every socket joining now reads its standing
		h.following[screening] = f
		h.follows.Add(1)
		go h.follow(screening, f)
	}
	return f.ready
}

// seen is the screening's seen epoch, nil when the hub does not follow it.
func (h *Hub) seen(screening string) *atomic.Int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.following[screening]; f != nil {
		return &f.seen
	}
	return nil
}

// Missed reports whether an admission event newer than epoch may have been dispatched before c joined, so
// c may lack its news: the caller then reads c's standing again. Dispatch records an event's epoch before
// it lists the screening's sockets, and Join adds a socket under the same lock that listing takes, so an
// event not reported here is dispatched to c.
//
// A client that was sent a tick's news (a position or a pass) since it joined lacks nothing: events are
// dispatched in order, and that news is where the latest one left it. Reading again would only send the
// same rank once more, after the tick's position, with the read's time for tick_at.
func (h *Hub) Missed(c *Client, epoch int64) bool {
	if c.Mark() > 0 {
		return false
	}
	seen := h.seen(c.screening)
	return seen == nil || seen.Load() > epoch
}

// pinger pings every socket each pingPeriod, one timer for the hub instead of one per socket. The sockets are
// pinged a slice at a time, one of pingSlices each pingPeriod/pingSlices (a socket's slice is fixed at Join):
// pinging all at once is a push to every socket and a pong back from each, which at 16,666 sockets per
// process delayed the tick it met by two seconds (docs/benchmarks.md).
func (h *Hub) pinger() {
	defer h.follows.Done()
	step := h.pingEvery / pingSlices
	t := time.NewTicker(step)
	defer t.Stop()
	start := time.Now()
	var done int64    // steps taken: slice done%pingSlices is the next to ping
	var due []*Client // reused: a step lists its slice without garbage
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		// Steps follow the clock, not the ticks: a ticker drops the ticks of a late receiver, and a skipped
		// slice would go a whole period more without a ping, past its pongWait.
		for now := int64(time.Since(start) / step); done < now; done++ {
			due = h.appendSlice(due[:0], int(done%pingSlices))
			for _, c := range due {
				c.ping()
			}
			clear(due)
		}
	}
}

// appendSlice appends to dst the clients whose ping slice is slice.
func (h *Hub) appendSlice(dst []*Client, slice int) []*Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, room := range h.rooms {
		for c := range room {
			if int(c.pingSlice) == slice {
				dst = append(dst, c)
			}
		}
	}
	return dst
}

// watchRedis checks Redis every healthEvery and tells every socket when it stops answering (nobody is
// admitted and nothing moves meanwhile: the scheduler's ticks fail) and when it answers again. The sockets
// stay open; their places are kept, or rebuilt if Redis lost them (resync).
func (h *Hub) watchRedis() {
	defer h.follows.Done()
	t := time.NewTicker(healthEvery)
	defer t.Stop()
	down := false
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(h.ctx, healthTimeout)
		err := h.lines.Ping(ctx)
		cancel()
		if h.ctx.Err() != nil {
			return
		}
		if err == nil && !down {
			h.recheckEpochs()
		}
		switch {
		case err != nil && !down:
			down = true
			h.log.Error("hub: redis unreachable: telling the sockets", "err", err)
			for _, c := range h.allClients() {
				c.Send(UnavailableMessage())
			}
		case err == nil && down:
			down = false
			h.log.Info("hub: redis answers again")
			for _, c := range h.allClients() {
				c.Send(AvailableMessage())
			}
		}
	}
}

// recheckEpochs asks each followed screening whose last event in Redis is newer than any this hub
// dispatched to read its line whole: the event's publisher died between admitting and publishing, or the
// message was lost, and no later event came to show the gap (a line standing still). The admitted then get
// their pass from here, and the waiting their rank. One GET per followed screening.
func (h *Hub) recheckEpochs() {
	h.mu.Lock()
	following := make(map[string]*followed, len(h.following))
	for id, f := range h.following {
		following[id] = f
	}
	h.mu.Unlock()
	for id, f := range following {
		seen := f.seen.Load()
		if seen == math.MaxInt64 {
			continue // the line is being read already
		}
		ctx, cancel := context.WithTimeout(h.ctx, healthTimeout)
		epoch, err := h.lines.Epoch(ctx, id)
		cancel()
		if err != nil || epoch <= seen {
			f.missing = 0
			continue
		}
		// An event may just be on its way: only one still missing a check later counts.
		if f.missing == 0 || seen >= f.missing {
			f.missing = epoch
			continue
		}
		f.missing = 0
		select {
		case f.recheck <- struct{}{}:
		default:
		}
	}
}

// markSeen raises the screening's seen epoch to epoch; setSeen sets it, lower too (after reading the line).
// Only the screening's subscription goroutine calls them, so a load and a store need no compare-and-swap.
func (h *Hub) markSeen(screening string, epoch int64) {
	if seen := h.seen(screening); seen != nil && seen.Load() < epoch {
		seen.Store(epoch)
	}
}

func (h *Hub) setSeen(screening string, epoch int64) {
	if seen := h.seen(screening); seen != nil {
		seen.Store(epoch)
	}
}

// follow keeps a subscription to the screening's events until the hub shuts down, and owns the screening's
// Line: every event moves it, and each waiting socket's rank is computed from it, with no Redis call per
// socket. A (re)subscription reads the line whole first, so a new instance, or one whose subscription
// dropped, catches up at once.
func (h *Hub) follow(screening string, f *followed) {
	defer h.follows.Done()
	line := queue.Line{}
	first := true
	for {
		err := h.lines.Subscribe(h.ctx, screening, func(ctx context.Context, ev queue.Event) {
			h.Dispatch(ctx, &line, ev)
		}, func(ctx context.Context) {
			// The first time, the sockets here have just been told where they stand; after a dropped
			// subscription they may have missed ticks, so they are told again.
			h.resync(ctx, screening, &line, nil, time.Now().UnixMilli(), !first)
			if first {
				first = false
				close(f.ready)
			}
		}, f.recheck)
		if h.ctx.Err() != nil {
			return
		}
		h.log.Warn("hub: subscription ended; retrying", "screening", screening, "err", err)
		select {
		case <-h.ctx.Done():
			return
		case <-time.After(resubscribeEvery):
		}
	}
}

// Dispatch tells this instance's sockets what an event means for them and moves the screening's line: after
// a tick, the admitted get their pass and the waiting their new rank, the line's length and a wait estimate;
// at the opening, the sockets of the pre-queue learn their shuffled place; a pause or resume is passed on;
// on sold out, everyone is told and closed. It runs on the screening's subscription goroutine, which owns
// line.
func (h *Hub) Dispatch(ctx context.Context, line *queue.Line, ev queue.Event) {
	f := h.followedOf(ev.Screening)
	if ev.Kind == queue.EventTick || ev.Kind == queue.EventOpened || ev.Kind == queue.EventRebuilt || ev.Kind == queue.EventSoldOut {
		h.markSeen(ev.Screening, ev.Epoch) // before listing the sockets: see Missed
	}
	clients := h.clients(ev.Screening)
	switch ev.Kind {
	case queue.EventSoldOut:
		soldOut(clients)
	case queue.EventPaused, queue.EventResumed:
		h.setPause(f, ev.Screening, ev.Kind == queue.EventPaused, true)
	case queue.EventOpened, queue.EventRebuilt:
		if ev.Kind == queue.EventRebuilt {
			h.replace(ctx, ev.Screening, clients) // a newcomer may have moved to the end
		}
		h.placePre(ctx, ev.Screening, clients)
		if line.Apply(ev) {
			h.pushRanks(f, line, clients, ev.TickAtMs)
		}
	case queue.EventTick:
		var admitted map[string]bool
		if len(ev.Admitted) > 0 {
			admitted = make(map[string]bool, len(ev.Admitted))
			for _, t := range ev.Admitted {
				admitted[t] = true
			}
			expiresAt := time.UnixMilli(ev.ExpiresAtMs)
			for _, c := range clients {
				if admitted[c.token] {
					c.Admit(expiresAt)
				}
			}
		}
		if f != nil {
			f.pace.add(ev.TickAtMs, len(ev.Admitted))
		}
		h.setPause(f, ev.Screening, ev.Paused, false) // a pause or resume whose own event was lost
		if line.Apply(ev) {
			h.pushRanks(f, line, clients, ev.TickAtMs)
			return
		}
		if ev.Epoch <= line.Epoch {
			return // old news (events from two instances crossed): the line already moved past it
		}
		// An event was missed (a dropped connection, a publish that failed): read the line whole.
		h.resync(ctx, ev.Screening, line, admitted, ev.TickAtMs, true)
	}
}

// soldOut tells the clients the screening sold out, and closes them.
func soldOut(clients []*Client) {
	msg := SoldOutMessage()
	for _, c := range clients {
		c.Send(msg)
		c.Close(websocket.CloseNormalClosure, "sold out")
	}
}

// followedOf is the screening's followed state, nil when the hub does not follow it.
func (h *Hub) followedOf(screening string) *followed {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.following[screening]
}

// placePre gives the sockets that joined in the pre-queue their place in the opened line: one round trip
// for all of them, once per opening.
func (h *Hub) placePre(ctx context.Context, screening string, clients []*Client) {
	h.place(ctx, screening, clients, func(c *Client) bool { return c.seq.Load() == 0 }, func(c *Client, seq int64) {
		c.seq.CompareAndSwap(0, seq)
	})
}

// replace reads again the number of every waiting socket after a rebuild, since the rebuild moves a token
// that registered after the loss to the end of the line.
func (h *Hub) replace(ctx context.Context, screening string, clients []*Client) {
	h.place(ctx, screening, clients, func(c *Client) bool { return c.seq.Load() > 0 }, func(c *Client, seq int64) {
		c.seq.Store(seq)
	})
}

// place reads the sequence numbers of the clients that want it (and are not admitted) in one round trip per
// thousand, and hands each number found to set.
func (h *Hub) place(ctx context.Context, screening string, clients []*Client, want func(*Client) bool, set func(*Client, int64)) {
	var picked []*Client
	var tokens []string
	for _, c := range clients {
		if want(c) && !c.admitted() {
			picked = append(picked, c)
			tokens = append(tokens, c.token)
		}
	}
	if len(picked) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	seqs, err := h.lines.Seqs(ctx, screening, tokens)
	if err != nil {
		h.log.Error("hub: read the places of the sockets", "screening", screening, "err", err)
		return
	}
	for i, c := range picked {
		if seqs[i] > 0 {
			set(c, seqs[i])
		}
	}
}

// resync reads the screening's line from Redis, hands their pass to local sockets that were admitted by an
// event this instance missed, places sockets of the pre-queue if the line opened meanwhile, and, when push,
// sends every waiting socket its rank.
func (h *Hub) resync(ctx context.Context, screening string, line *queue.Line, handled map[string]bool, tickAtMs int64, push bool) {
	h.resyncs.Inc()
	// The numbers of the waiting sockets are taken before the read: each was handed out before its socket
	// joined, so before the read, and Redis lost the line if the read does not know one. A socket that
	// registers while the line is read has a number the read may not know, and is no sign of a loss.
	known := waitingSeqs(h.clients(screening))
	fresh, err := h.readLine(ctx, screening)
	if err != nil {
		return // the hub is shutting down
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	if fresh.Closed {
		// Sold out while this instance did not hear it (the message lost, or the subscription down).
		*line = fresh
		h.setSeen(screening, line.Epoch)
		soldOut(h.clients(screening))
		return
	}
	if f := h.followedOf(screening); f != nil {
		f.pace.start(fresh.AdmittedAtMs)
	}
	if lost(line, fresh, known) {
		fresh = h.rebuild(ctx, screening, fresh)
		h.replace(ctx, screening, h.clients(screening))
	}
	*line = fresh
	// Events lost while the subscription was down may include a pause or a resume.
	h.setPause(h.followedOf(screening), screening, fresh.Paused, true)
	h.setSeen(screening, line.Epoch) // before listing the sockets: see Missed
	clients := h.clients(screening)
	if line.Epoch > 0 {
		h.placePre(ctx, screening, clients)
	}
	for _, c := range clients {
		seq := c.seq.Load()
		if seq == 0 || seq > line.Head || handled[c.token] || c.admitted() {
			continue
		}
		// Left the line without a pass from this instance: admitted by a missed event, or left.
		e, err := h.lines.Status(ctx, screening, c.token)
		if err != nil {
			h.log.Error("hub: recover admission", "screening", screening, "err", err)
			return
		}
		if e.State == queue.Admitted {
			c.Admit(e.ExpiresAt)
		}
	}
	if push {
		h.pushRanks(h.followedOf(screening), line, clients, tickAtMs)
	}
}

// readLine reads the screening's line, again every resubscribeEvery until it succeeds or ctx ends: until
// then which events came is unknown, and no later event may arrive to retry (a line standing still), so
// the screening's events wait. Meanwhile every socket joining reads its own standing (Missed).
func (h *Hub) readLine(ctx context.Context, screening string) (queue.Line, error) {
	for attempt := 0; ; attempt++ {
		readCtx, cancel := context.WithTimeout(ctx, redisTimeout)
		fresh, err := h.lines.Line(readCtx, screening)
		cancel()
		if err == nil {
			return fresh, nil
		}
		h.setSeen(screening, math.MaxInt64)
		if attempt == 0 {
			h.log.Error("hub: read line; retrying", "screening", screening, "err", err)
		}
		select {
		case <-ctx.Done():
			return queue.Line{}, ctx.Err()
		case <-time.After(resubscribeEvery):
		}
	}
}

// lost reports whether Redis lost the line since this instance last saw it (a restart without
// persistence): its epochs went back, or a local socket waits with a number (known, taken before fresh was
// read) Redis never handed out.
func lost(seen *queue.Line, fresh queue.Line, known []int64) bool {
	if seen.Epoch > 0 && fresh.Epoch < seen.Epoch {
		return true
	}
	for _, seq := range known {
		if seq > fresh.LastSeq {
			return true
		}
	}
	return false
}

// waitingSeqs are the sequence numbers of the clients that wait with one.
func waitingSeqs(clients []*Client) []int64 {
	seqs := make([]int64, 0, len(clients))
	for _, c := range clients {
		if seq := c.seq.Load(); seq > 0 && !c.admitted() {
			seqs = append(seqs, seq)
		}
	}
	return seqs
}

// rebuild puts this instance's sockets back in the line Redis lost (queue.Restore), and returns the line
// after it, or fresh when the rebuild failed (the next event's gap retries).
func (h *Hub) rebuild(ctx context.Context, screening string, fresh queue.Line) queue.Line {
	clients := h.clients(screening)
	standings := make([]queue.Standing, 0, len(clients))
	for _, c := range clients {
		st := queue.Standing{Token: c.token, Seq: c.seq.Load()}
		c.mu.Lock()
		if c.admittedMs != 0 {
			st.ExpiresAt, st.Seq = time.UnixMilli(c.admittedMs), 0
		}
		c.mu.Unlock()
		if st.Seq > 0 || !st.ExpiresAt.IsZero() {
			standings = append(standings, st)
		}
	}
	rebuilt, n, err := h.lines.Restore(ctx, screening, standings)
	if err != nil && n == 0 {
		h.log.Error("hub: rebuild the line Redis lost", "screening", screening, "err", err)
		return fresh
	}
	h.log.Warn("hub: rebuilt the line Redis lost from this instance's sockets", "screening", screening, "restored", n, "err", err)
	if n < 0 {
		return fresh // closed meanwhile
	}
	return rebuilt
}

// pushRanks sends each waiting client its rank, computed from the line, with a wait estimate from the
// screening's measured admission rate (none while paused or before the rate is known).
func (h *Hub) pushRanks(f *followed, line *queue.Line, clients []*Client, tickAtMs int64) {
	var rate paceRate // unknown: no estimate
	if f != nil && f.pause.Load() != pausePaused {
		rate = f.pace.rate()
	}
	r := newRanks(line, tickAtMs, rate)
	for _, c := range clients {
		seq := c.seq.Load()
		if seq == 0 {
			continue
		}
		if rank, ok := line.Rank(seq); ok {
			c.sendPosition(r, rank) // the writer renders it
		}
	}
}

// Shutdown stops taking sockets, closes every open one with 1012 (reconnect with your token), and waits
// for their handlers to return or ctx to end.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.draining = true
	h.mu.Unlock()
	for _, c := range h.allClients() {
		c.Close(CloseServiceRestart, "server restarting: reconnect with your token")
	}
	done := make(chan struct{})
	go func() {
		h.serving.Wait()
		h.cancel()
		h.follows.Wait()
		h.writers.wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		h.cancel()
		return ctx.Err()
	}
}
