package queue

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher sends the calls that arrive together to Redis together: a call is queued, and one flusher at a
// time sends everything queued as one pipeline (up to max calls), hands each caller its own reply, and goes
// on while more are queued. Alone, a call goes out at once, in one round trip as before; in a burst of
// thousands, the ones that arrive while a pipeline is under way go out in the next one. That turns
// thousands of round trips (a write and a read on both ends of a connection for each, and a wait for one
// of go-redis's pooled connections) into tens (docs/benchmarks.md). Each command or script still runs
// alone in Redis, so nothing about a call's atomicity changes, and the pipeline keeps the order they were
// queued in. Registrations (register.lua) and pass checks go this way.
type batcher[C any] struct {
	max  int
	send func([]*C) // fills in every call's reply; add's caller waits on the call's own signal

	mu       sync.Mutex
	pending  []*C
	flushing bool
}

// add queues c for the next pipeline.
func (b *batcher[C]) add(c *C) {
	b.mu.Lock()
	b.pending = append(b.pending, c)
	start := !b.flushing
	b.flushing = true
	b.mu.Unlock()
	if start {
		go b.flush()
	}
}

// flush sends what is queued until nothing is.
func (b *batcher[C]) flush() {
	for {
		b.mu.Lock()
		n := min(len(b.pending), b.max)
		if n == 0 {
			b.flushing = false
			b.pending = nil // let a burst's backing array go
			b.mu.Unlock()
			return
		}
		batch := make([]*C, n)
		copy(batch, b.pending)
		clear(b.pending[:n])
		b.pending = b.pending[n:]
		b.mu.Unlock()
		b.send(batch)
	}
}

// batchSize bounds one pipeline.
const batchSize = 256

// batchTimeout bounds one pipeline's round trip (a caller stops waiting when its own context ends).
const batchTimeout = 5 * time.Second

type registration struct {
	keys []string
	args []any
	done chan struct{}
	res  []any
	err  error
}

// register runs registerScript with keys and args in the next pipeline and returns its reply.
func (q *Queue) register(ctx context.Context, keys []string, args ...any) ([]any, error) {
	r := &registration{keys: keys, args: args, done: make(chan struct{})}
	q.regs.add(r)
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err() // the reply, when it comes, goes nowhere; a registration is safe to repeat
	}
}

func (q *Queue) sendRegistrations(batch []*registration) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	again := q.pipeRegistrations(ctx, batch)
	if len(again) > 0 {
		// Redis does not know the script (restarted, or flushed): load it once and send those again.
		if err := registerScript.Load(ctx, q.rdb).Err(); err != nil {
			for _, r := range again {
				r.err = err
			}
		} else if still := q.pipeRegistrations(ctx, again); len(still) > 0 {
			for _, r := range still {
				r.res, r.err = registerScript.Run(ctx, q.rdb, r.keys, r.args...).Slice()
			}
		}
	}
	for _, r := range batch {
		close(r.done)
	}
}

// pipeRegistrations sends batch as one pipeline and fills in every reply, but for the registrations Redis
// answered NOSCRIPT, which it returns.
func (q *Queue) pipeRegistrations(ctx context.Context, batch []*registration) (noScript []*registration) {
	cmds := make([]*redis.Cmd, len(batch))
	pipe := q.rdb.Pipeline()
	for i, r := range batch {
		cmds[i] = registerScript.EvalSha(ctx, pipe, r.keys, r.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, r := range batch {
		r.res, r.err = cmds[i].Slice()
		if r.err != nil && redis.HasErrorPrefix(r.err, "NOSCRIPT") {
			noScript = append(noScript, r)
		}
	}
	return noScript
}
