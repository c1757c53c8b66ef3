// One socket's side of the hub: what is queued for it (messages, a ping, a pong, the close frame) until a
// writer takes it, the news it was last told (admission, pause), and how it closes.

package hub

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/waitroom/waitroom/queue"
)

// sendBuffer is how many messages may wait for a socket before it counts as too slow.
const sendBuffer = 16

// client is one socket of one token in one screening.
//
// Who changes what: the screening's follower and the socket's welcome queue messages (send, sendTick,
// sendPosition, admit, tellPaused); the pinger queues pings; the reader queues pongs and closes; a writer
// takes what is queued (writer.go). All of it is under mu, but seq, which the follower alone writes once
// the socket joined.
type client struct {
	hub       *Hub
	conn      *websocket.Conn
	screening string
	token     string
	// seq is the token's sequence number while waiting (queue.Line); 0 in the pre-queue (until the opening
	// gives it one) or when it joined admitted.
	seq atomic.Int64

	pingSlice uint8 // which of the pinger's pingSlices pings it (pinger)
	// numbering is the queue.Numbering seq is of (0: not known), so that a rebuild after Redis lost the line
	// tells a number of the lost line from one handed out since (hub/recover.go). Stored with seq.
	numbering atomic.Uint32

	mu sync.Mutex
	outbox
	told
}

// outbox is what waits for a writer, and the socket's closing. Guarded by client.mu. The flags are last and
// together, so that padding does not push a client (one per socket) into a larger size class.
type outbox struct {
	out        []outMsg // messages queued for the socket, at most sendBuffer
	spare      []outMsg // out's previous backing array, reused
	pong       []byte   // the payload of the pong to write, when pongDue
	closeText  string
	closeCode  int
	pendingPos int  // index in out of a queued position a newer one may replace; -1 when none
	scheduled  bool // in the writers' queue or being written (writer.go)
	pingDue    bool
	pongDue    bool // a pong answering the peer's last ping is to be written, with pong as its payload
	closed     bool
	linger     bool // the reader closes the connection after the close frame (closeRead), not the writer
}

// told is what the socket was last told of its standing. Guarded by client.mu.
type told struct {
	admittedMs int64  // expiry of the admission whose pass was sent; 0 while waiting
	ticks      uint64 // tick messages (positions, passes) queued so far
	toldPaused bool   // whether the client was last told admission is paused
}

func newClient(h *Hub, conn *websocket.Conn, screening, token string, seq int64, numbering queue.Numbering, paused bool) *client {
	c := &client{hub: h, conn: conn, screening: screening, token: token}
	c.pendingPos, c.toldPaused = -1, paused
	c.seq.Store(seq)
	c.numbering.Store(uint32(numbering))
	return c
}

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

// send queues msg for the client. A client whose buffer is full is too slow: it is disconnected (it can
// reconnect with its token and keeps its place) rather than waited on.
func (c *client) send(msg []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendLocked(msg)
}

// sendTick queues a tick's message (a pass), counted for sendUnlessTicked.
func (c *client) sendTick(msg []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticks++
	return c.sendLocked(msg)
}

// mark stamps the tick messages queued so far, for sendUnlessTicked.
func (c *client) mark() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ticks
}

// sendUnlessTicked queues msg only if no tick message was queued since mark: a catch-up computed before a
// tick must not arrive after that tick's newer news.
func (c *client) sendUnlessTicked(mark uint64, msg []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ticks != mark {
		return false
	}
	return c.sendLocked(msg)
}

// place gives a client that joined in the pre-queue its sequence number in the opened line, unless the
// hub placed it already.
func (c *client) place(seq int64, numbering queue.Numbering) {
	if c.seq.CompareAndSwap(0, seq) {
		c.numbering.Store(uint32(numbering))
	}
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
func (c *client) sendPosition(r *ranks, rank int64) bool {
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

func (c *client) sendLocked(msg []byte) bool {
	return c.queueLocked(outMsg{data: msg})
}

func (c *client) queueLocked(m outMsg) bool {
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

func (c *client) scheduleLocked() {
	if !c.scheduled {
		c.scheduled = true
		c.hub.writers.schedule(c)
	}
}

// ping queues a ping, unless the client is closing.
func (c *client) ping() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.pingDue = true
		c.scheduleLocked()
	}
}

// close sends the close frame after what is already queued, then closes the socket. Later calls do nothing.
func (c *client) close(code int, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(code, reason)
}

func (c *client) closeLocked(code int, reason string) {
	if c.closed {
		return
	}
	c.closed, c.closeCode, c.closeText = true, code, reason
	c.scheduleLocked()
}

// admit sends the pass of the admission that lapses at expiresAt, unless this client already got it: a
// waitlist's offer of seats when seats > 0 (an offered message), else an admitted message.
func (c *client) admit(expiresAt time.Time, seats int) {
	c.mu.Lock()
	sent := c.admittedMs == expiresAt.UnixMilli()
	c.admittedMs = expiresAt.UnixMilli()
	c.mu.Unlock()
	if sent {
		return
	}
	pass, err := c.hub.passes.IssueOffer(c.screening, c.token, expiresAt, seats)
	if err != nil {
		c.hub.log.Error("hub: issue pass", "screening", c.screening, "err", err)
		c.send(ErrorMessage("INTERNAL", "internal error"))
		return
	}
	if seats > 0 {
		c.sendTick(OfferedMessage(c.token, pass, expiresAt, seats))
		return
	}
	c.sendTick(AdmittedMessage(c.token, pass, expiresAt))
}

func (c *client) admitted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.admittedMs != 0
}

// tellPaused sends paused or resumed to a waiting client told otherwise so far.
func (c *client) tellPaused(paused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admittedMs != 0 || c.toldPaused == paused {
		return
	}
	c.toldPaused = paused
	c.sendLocked(PausedMessage(paused))
}

// broken marks a client whose connection failed a write: nothing more is queued or written, and closing the
// connection ends its reader.
func (c *client) broken() {
	c.mu.Lock()
	c.closed = true
	c.out = nil
	c.mu.Unlock()
	_ = c.conn.Close()
}
