package hub

import (
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// writers is the hub's pool of socket writers. A socket has no goroutine of its own for writing: a message
// queued for it puts the client in the pool's queue (once, however many messages wait), and a writer takes
// the client, writes all it has, and moves on. A tick that pushes 19,000 positions so wakes at most
// maxWriters goroutines instead of 19,000, and an idle socket holds no write goroutine and no write buffer
// (the upgrader's buffers come from a pool). Writers start on demand and end when the queue is empty.
type writers struct {
	mu      sync.Mutex
	queue   []*Client
	running int
	idle    sync.Cond // signalled when running drops to 0
}

// maxWriters bounds the writer goroutines. A writer blocked on a stalled peer holds one of them for at most
// writeWait; the rest keep the line moving.
const maxWriters = 32

func (w *writers) schedule(c *Client) {
	w.mu.Lock()
	w.queue = append(w.queue, c)
	start := w.running < maxWriters
	if start {
		w.running++
	}
	w.mu.Unlock()
	if start {
		go w.run()
	}
}

// writerBatch is how many clients a writer takes from the queue at once: a tick queues thousands, and one
// lock per client would have the writers queue up on the lock instead of writing.
const writerBatch = 16

func (w *writers) run() {
	var batch [writerBatch]*Client
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.running--
			if w.running == 0 && w.idle.L != nil {
				w.idle.Broadcast()
			}
			w.mu.Unlock()
			return
		}
		n := copy(batch[:], w.queue)
		clear(w.queue[:n])
		w.queue = w.queue[n:]
		if len(w.queue) == 0 {
			w.queue = nil // let the backing array go after a burst
		}
		w.mu.Unlock()
		for i := range n {
			batch[i].flush()
			batch[i] = nil
		}
	}
}

// wait returns once no writer runs (and so every queued message is written or its socket closed).
func (w *writers) wait() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.idle.L == nil {
		w.idle.L = &w.mu
	}
	for w.running > 0 {
		w.idle.Wait()
	}
}

// flush writes what is queued for the client, then its close frame once it is closing. Only the writer that
// took the client from the queue runs it: scheduled stays true until flush finds nothing left, so a client is
// never in the queue twice and never written by two writers.
func (c *Client) flush() {
	for {
		c.mu.Lock()
		msgs, ping := c.out, c.pingDue
		c.out, c.pingDue = c.spare[:0], false
		c.spare, c.pendingPos = nil, -1
		closing := c.closed
		if len(msgs) == 0 && !ping && !closing {
			c.scheduled = false
			c.mu.Unlock()
			return
		}
		code, text, linger := c.closeCode, c.closeText, c.linger
		c.mu.Unlock()

		c.extendWrite()
		for _, m := range msgs {
			if err := c.conn.WriteMessage(websocket.TextMessage, m); err != nil {
				c.broken()
				return
			}
		}
		if ping {
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				c.broken()
				return
			}
		}
		if closing {
			_ = c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, text))
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

// extendWrite bounds the coming writes by writeWait. Moving the deadline costs a timer update, once per
// socket per tick: a deadline still at least 7/8 of writeWait away stands. Only the flushing writer calls it.
func (c *Client) extendWrite() {
	target := time.Now().Add(writeWait)
	if c.writeUntil.Before(target.Add(-writeWait / 8)) {
		c.writeUntil = target
		_ = c.conn.SetWriteDeadline(target)
	}
}

// broken marks a client whose connection failed a write: nothing more is queued or written, and closing the
// connection ends its reader.
func (c *Client) broken() {
	c.mu.Lock()
	c.closed = true
	c.out = nil
	c.mu.Unlock()
	_ = c.conn.Close()
}
