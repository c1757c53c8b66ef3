// Package hub owns the sockets: one writer goroutine per connection, bounded send buffers, ping/pong with
// deadlines, and the fan-out of admission ticks (positions and passes) to the sockets of this instance.
//
// Guarantees: only a client's write pump writes to its connection; a client that cannot keep up is
// disconnected with a reason, never waited on; after each tick that changed the line (admissions, joins,
// leaves) every waiting socket of the screening is sent its rank and the line's length, and each admitted
// one its pass, once per admission.
package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/waitroom/waitroom/queue"
)

const (
	// writeWait bounds one write to a socket.
	writeWait = 10 * time.Second
	// pongWait is how long a socket may stay silent (no pong, no message) before it is dropped.
	pongWait = 60 * time.Second
	// pingPeriod sends pings often enough that a live peer's pong always beats pongWait.
	pingPeriod = pongWait * 9 / 10
	// maxMessageSize bounds a client frame: the protocol's client messages are tiny.
	maxMessageSize = 512
	// sendBuffer is how many messages may wait for a socket before it counts as too slow.
	sendBuffer = 16
	// ranksTimeout bounds the Redis round trip that computes the ranks of one tick.
	ranksTimeout = 5 * time.Second
)

// Close codes the hub uses beyond RFC 6455's basics.
const (
	// CloseServiceRestart (1012) tells a client to reconnect, keeping its token: the instance is draining.
	CloseServiceRestart = 1012
	// CloseTryAgainLater (1013) tells a client the server cannot serve it now.
	CloseTryAgainLater = 1013
)

// Positions reports ranks in a screening's line.
type Positions interface {
	Ranks(ctx context.Context, screening string, tokens []string) (zeroBasedRanks []int64, total int64, err error)
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
	positions Positions
	passes    Passes
	leaver    Leaver
	log       *slog.Logger
	sockets   prometheus.Gauge

	mu       sync.Mutex
	rooms    map[string]map[*Client]struct{}
	draining bool
	serving  sync.WaitGroup // one per Serve call; Shutdown waits for them
}

// New returns an empty hub; sockets counts its open sockets.
func New(p Positions, passes Passes, l Leaver, reg prometheus.Registerer, log *slog.Logger) *Hub {
	h := &Hub{
		positions: p, passes: passes, leaver: l, log: log, rooms: map[string]map[*Client]struct{}{},
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "waitroom", Subsystem: "hub", Name: "sockets", Help: "Open WebSocket connections on this instance."}),
	}
	reg.MustRegister(h.sockets)
	return h
}

// Client is one socket of one token in one screening.
type Client struct {
	hub       *Hub
	conn      *websocket.Conn
	screening string
	token     string
	send      chan []byte

	mu         sync.Mutex
	closed     bool
	closeCode  int
	closeText  string
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

// Join adds a socket to the hub and starts its write pump; first is its first message. It returns nil (and
// rejects the socket with 1012) when the hub is draining. first may be nil. The caller then calls Serve.
func (h *Hub) Join(conn *websocket.Conn, screening, token string, first []byte) *Client {
	c := &Client{hub: h, conn: conn, screening: screening, token: token, send: make(chan []byte, sendBuffer)}
	if first != nil {
		c.send <- first
	}
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
	h.serving.Add(1)
	h.mu.Unlock()
	h.sockets.Inc()
	go c.writePump()
	return c
}

// Serve reads the client's messages until the socket closes, then removes it from the hub.
func (h *Hub) Serve(ctx context.Context, c *Client) {
	defer h.serving.Done()
	defer h.leave(c)
	c.conn.SetReadLimit(maxMessageSize)
	_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			if websocket.IsCloseError(err, websocket.CloseMessageTooBig) || err == websocket.ErrReadLimit {
				c.Close(websocket.CloseMessageTooBig, "message too big")
			}
			return
		}
		_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
		var in Inbound
		if json.Unmarshal(data, &in) != nil || in.Type != "leave" {
			c.Send(ErrorMessage("BAD_MESSAGE", `the only client message is {"type":"leave"}`))
			continue
		}
		if _, err := h.leaver.Leave(ctx, c.screening, c.token); err != nil {
			h.log.Error("hub: leave", "screening", c.screening, "err", err)
			c.Send(ErrorMessage("UNAVAILABLE", "could not leave the line; try again"))
			continue
		}
		c.Close(websocket.CloseNormalClosure, "left")
	}
}

func (h *Hub) leave(c *Client) {
	c.Close(websocket.CloseNormalClosure, "")
	h.mu.Lock()
	if room := h.rooms[c.screening]; room != nil {
		delete(room, c)
		if len(room) == 0 {
			delete(h.rooms, c.screening)
		}
	}
	h.mu.Unlock()
	h.sockets.Dec()
}

// Send queues msg for the client. A client whose buffer is full is too slow: it is disconnected (it can
// reconnect with its token and keeps its place) rather than waited on.
func (c *Client) Send(msg []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendLocked(msg)
}

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

func (c *Client) sendLocked(msg []byte) bool {
	if c.closed {
		return false
	}
	select {
	case c.send <- msg:
		return true
	default:
		c.closeLocked(CloseTryAgainLater, "too slow: reconnect with your token")
		return false
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
	close(c.send)
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

// writePump is the only writer of the client's connection.
func (c *Client) writePump() {
	ping := time.NewTicker(pingPeriod)
	defer func() {
		ping.Stop()
		_ = c.conn.Close()
	}()
	for {
		select {
		case msg, ok := <-c.send:
			_ = c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if !ok {
				c.mu.Lock()
				code, text := c.closeCode, c.closeText
				c.mu.Unlock()
				_ = c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, text))
				return
			}
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		case <-ping.C:
			_ = c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
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

// Dispatch tells this instance's sockets what an event means for them: after a tick, the admitted get their
// pass and the waiting their new rank and the line's length; on sold out, everyone is told and closed.
func (h *Hub) Dispatch(ctx context.Context, ev queue.Event) {
	clients := h.clients(ev.Screening)
	if len(clients) == 0 {
		return
	}
	switch ev.Kind {
	case queue.EventSoldOut:
		msg := SoldOutMessage()
		for _, c := range clients {
			c.Send(msg)
			c.Close(websocket.CloseNormalClosure, "sold out")
		}
	case queue.EventTick:
		admitted := make(map[string]bool, len(ev.Admitted))
		for _, t := range ev.Admitted {
			admitted[t] = true
		}
		expiresAt := time.UnixMilli(ev.ExpiresAtMs)
		var waiting []*Client
		for _, c := range clients {
			switch {
			case admitted[c.token]:
				c.Admit(expiresAt)
			case !c.admitted():
				waiting = append(waiting, c)
			}
		}
		h.pushRanks(ctx, ev.Screening, waiting, ev.TickAtMs)
	}
}

// pushRanks sends each waiting client its rank, read from Redis in one round trip.
func (h *Hub) pushRanks(ctx context.Context, screening string, waiting []*Client, tickAtMs int64) {
	if len(waiting) == 0 {
		return
	}
	tokens := make([]string, len(waiting))
	for i, c := range waiting {
		tokens[i] = c.token
	}
	ctx, cancel := context.WithTimeout(ctx, ranksTimeout)
	defer cancel()
	ranks, total, err := h.positions.Ranks(ctx, screening, tokens)
	if err != nil {
		h.log.Error("hub: ranks", "screening", screening, "err", err)
		return
	}
	for i, c := range waiting {
		if ranks[i] >= 0 {
			c.sendTick(PositionMessage(ranks[i], total, tickAtMs))
		}
	}
}

// Shutdown stops taking sockets, closes every open one with 1012 (reconnect with your token), and waits
// for their handlers to return or ctx to end.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.draining = true
	var all []*Client
	for _, room := range h.rooms {
		for c := range room {
			all = append(all, c)
		}
	}
	h.mu.Unlock()
	for _, c := range all {
		c.Close(CloseServiceRestart, "server restarting: reconnect with your token")
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
