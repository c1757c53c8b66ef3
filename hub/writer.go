// The writers: a fixed pool of goroutines that write every socket's queued frames in one write each, and the
// watchdog that cuts a write a stalled peer holds up.

package hub

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// writers is the hub's pool of socket writers. A socket has no goroutine of its own for writing: a message
// queued for it puts the client in the pool's queue (once, however many messages wait), and a writer takes
// the client, writes all it has, and moves on. A tick that pushes 19,000 positions so keeps maxWriters
// goroutines busy instead of 19,000, and an idle socket holds no write goroutine and no write buffer (the
// upgrader's buffers come from a pool). The writers run from start to stop (Hub.Run); an idle one waits on
// the pool's condition.
//
// A write to a peer that stopped reading blocks once the kernel's buffers are full. No socket has a write
// deadline of its own (moving one is a timer update per socket per tick, and gorilla moves it on every
// write): one watchdog closes the connection of a flush that has not finished after the timeout, which ends
// the write with an error and frees the writer.
type writers struct {
	mu sync.Mutex
	// queue[head:] are the clients waiting for a writer; the array is kept from tick to tick (up to
	// keptQueue), so a tick's hand-off makes no garbage.
	queue []*client
	head  int
	// work wakes an idle writer when a client is queued, and every writer when the pool stops.
	work     sync.Cond
	idle     int // writers waiting on work
	active   int // writers flushing a batch
	stopping bool
	slots    [maxWriters]writerSlot
	quit     chan struct{} // closed by stop: the watchdog ends
	done     sync.WaitGroup
	// gen is the watchdog's clock: one step per quarter of the timeout.
	gen atomic.Int64
	// timeout bounds one flush: writeWait when zero (tests shorten it before start).
	timeout time.Duration
}

// writerSlot is what one writer is flushing, for the watchdog.
type writerSlot struct {
	since atomic.Int64 // gen when the flush began
	c     atomic.Pointer[client]
}

// maxWriters is the number of writer goroutines. A writer blocked on a stalled peer holds one of them for at
// most the flush timeout; the rest keep the line moving.
const maxWriters = 32

// writeWait bounds one flush of a socket's queued messages (the watchdog).
const writeWait = 10 * time.Second

// start starts the writers and their watchdog; stop ends them.
func (w *writers) start() {
	w.mu.Lock()
	w.work.L = &w.mu
	w.quit = make(chan struct{})
	w.mu.Unlock()
	timeout := w.timeout
	if timeout <= 0 {
		timeout = writeWait
	}
	w.done.Add(maxWriters + 1)
	for slot := range maxWriters {
		go w.run(slot)
	}
	go w.watch(timeout)
}

// stop ends the writers, once each has finished the flush it is in, and the watchdog; what is still queued
// is not written (every socket is closed by then: Hub.Run).
func (w *writers) stop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.work.Broadcast()
	close(w.quit)
	w.done.Wait()
}

func (w *writers) schedule(c *client) {
	w.mu.Lock()
	if w.head > 0 && len(w.queue) == cap(w.queue) {
		// Full, with taken clients in front: move the waiting ones down rather than grow past them (a queue
		// that never empties would otherwise grow for ever).
		n := copy(w.queue, w.queue[w.head:])
		clear(w.queue[n:])
		w.queue, w.head = w.queue[:n], 0
	}
	w.queue = append(w.queue, c)
	wake := w.idle > 0
	w.mu.Unlock()
	if wake {
		w.work.Signal()
	}
}

// watch is the watchdog: every quarter of the timeout it steps gen and closes the connection of each flush
// that began more than four steps ago (so has run for longer than the timeout, and at most a quarter more).
func (w *writers) watch(timeout time.Duration) {
	defer w.done.Done()
	t := time.NewTicker(timeout / 4)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
		}
		g := w.gen.Add(1)
		for i := range w.slots {
			s := &w.slots[i]
			// c, then since, then c again: if the writer moved on in between, since is that of a later
			// flush (younger), or of the flush of c seen first, which then did run that long: a connection
			// is cut only after a flush to it ran past the timeout.
			c := s.c.Load()
			if c == nil {
				continue
			}
			since := s.since.Load()
			if s.c.Load() == c && g-since > 4 {
				_ = c.conn.Close() // the blocked write fails; flush marks the client broken
			}
		}
	}
}

// keptQueue is the largest queue array the writers keep between bursts (512 KiB of pointers).
const keptQueue = 1 << 16

// writerBatch is how many clients a writer takes from the queue at once: a tick queues thousands, and one
// lock per client would have the writers queue up on the lock instead of writing.
const writerBatch = 16

// run is one writer: it takes a batch of clients from the queue and flushes each, until the pool stops.
func (w *writers) run(slot int) {
	defer w.done.Done()
	s := &w.slots[slot]
	var batch [writerBatch]*client
	var buf []byte // the frames of one flush, reused from flush to flush
	flushing := false
	for {
		w.mu.Lock()
		if flushing {
			w.active--
			flushing = false
		}
		for w.head == len(w.queue) && !w.stopping {
			w.idle++
			w.work.Wait()
			w.idle--
		}
		if w.stopping {
			w.mu.Unlock()
			return
		}
		n := w.takeLocked(&batch)
		w.active++
		flushing = true
		w.mu.Unlock()
		for i := range n {
			s.since.Store(w.gen.Load())
			s.c.Store(batch[i])
			batch[i].flush(&buf)
			s.c.Store(nil)
			batch[i] = nil
		}
	}
}

// takeLocked moves up to writerBatch clients from the front of the queue to batch and returns how many.
func (w *writers) takeLocked(batch *[writerBatch]*client) int {
	n := copy(batch[:], w.queue[w.head:])
	clear(w.queue[w.head : w.head+n])
	w.head += n
	if w.head == len(w.queue) {
		w.queue, w.head = w.queue[:0], 0
		if cap(w.queue) > keptQueue {
			w.queue = nil // an exceptional burst: let its array go
		}
	}
	return n
}

// busy reports whether a writer is flushing or a client waits for one: a tick's push, or a flush of other
// news.
func (w *writers) busy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active > 0 || w.head < len(w.queue)
}

// flush writes what is queued for the client, then its close frame once it is closing. Only the writer that
// took the client from the queue runs it: scheduled stays true until flush finds nothing left, so a client is
// never in the queue twice and never written by two writers.
//
// The frames go to the connection itself, in one write per flush, not through gorilla's writer: that takes a
// channel lock, resets the write deadline (which the watchdog makes needless) and borrows a buffer from a
// pool for every frame, a tenth of the server's CPU in a tick. It is safe because flush is the connection's
// only writer: gorilla's own replies to a ping or a close, which its reader would write, are queued here
// instead (prepareRead). buf is the writer's scratch space for the frames.
func (c *client) flush(buf *[]byte) {
	for {
		c.mu.Lock()
		msgs, ping, pongDue, pong := c.out, c.pingDue, c.pongDue, c.pong
		c.out, c.pingDue, c.pongDue, c.pong = c.spare[:0], false, false, nil
		c.spare, c.pendingPos = nil, -1
		closing := c.closed
		if len(msgs) == 0 && !ping && !pongDue && !closing {
			c.scheduled = false
			c.mu.Unlock()
			return
		}
		code, text, linger := c.closeCode, c.closeText, c.linger
		c.mu.Unlock()

		b := (*buf)[:0]
		for _, m := range msgs {
			if m.pos != nil {
				b = m.pos.appendFrame(b, m.rank)
			} else {
				b = appendFrame(b, websocket.TextMessage, m.data)
			}
		}
		if pongDue {
			b = appendFrame(b, websocket.PongMessage, pong)
		}
		if ping {
			b = appendFrame(b, websocket.PingMessage, nil)
		}
		if closing {
			b = appendFrame(b, websocket.CloseMessage, websocket.FormatCloseMessage(code, text))
		}
		var err error
		if len(b) > 0 {
			_, err = c.conn.NetConn().Write(b)
		}
		if cap(b) <= keptFrameBuffer {
			*buf = b
		} else {
			*buf = nil // a rare large message: do not keep its buffer for the writer's life
		}
		if err != nil {
			c.broken()
			return
		}
		if closing {
			if !linger {
				_ = c.conn.Close() // the reader's next read fails, and Serve takes the client out of the hub
			}
			return // scheduled stays true: nothing is ever written to this client again
		}
		c.mu.Lock()
		clear(msgs)
		if c.spare == nil {
			c.spare = msgs
		}
		c.mu.Unlock()
	}
}

// keptFrameBuffer is the largest frame buffer a writer keeps between flushes.
const keptFrameBuffer = 64 << 10

// appendFrame appends to b one whole server frame (RFC 6455 §5.2: FIN set, not masked, no extension) of the
// opcode op (gorilla's message types are the opcodes) carrying payload.
func appendFrame(b []byte, op int, payload []byte) []byte {
	b = append(b, 0x80|byte(op))
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n <= 0xFFFF:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}
