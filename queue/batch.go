// Batching: calls that arrive together go to Redis together, in one pipeline (registrations, count-offs,
// pass checks); a count-off without an answer is sent again; Settle waits for them all before an exit.

package queue

import (
	"context"
	"errors"
	"fmt"
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
// queued in. Registrations (register.lua), sockets counted off (disconnect.lua: a drain or a mass close
// counts off thousands at once) and pass checks go this way.
type batcher[C any] struct {
	max  int
	send func([]*C) // fills in every call's reply; add's caller waits on the call's own signal

	mu       sync.Mutex
	pending  []*C
	flushing bool
	later    int // calls waiting to be queued again (addLater)
}

// add queues c for the next pipeline.
func (b *batcher[C]) add(c *C) { b.queue(c, false) }

// addLater queues c again after d (a call sent again: sendScripts). Until then the batcher is not idle.
func (b *batcher[C]) addLater(c *C, d time.Duration) {
	b.mu.Lock()
	b.later++
	b.mu.Unlock()
	time.AfterFunc(d, func() { b.queue(c, true) })
}

func (b *batcher[C]) queue(c *C, wasLater bool) {
	b.mu.Lock()
	if wasLater {
		b.later--
	}
	b.pending = append(b.pending, c)
	start := !b.flushing
	b.flushing = true
	b.mu.Unlock()
	if start {
		go b.flush()
	}
}

// idle reports whether nothing is queued, on its way, or waiting to be sent again.
func (b *batcher[C]) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.flushing && len(b.pending) == 0 && b.later == 0
}

// ErrQueued says a caller stopped waiting for a call that is still queued: it goes out when its turn comes
// (Settle waits for that before an instance exits).
var ErrQueued = errors.New("queue: the call is still queued and runs when its turn comes")

// Settle waits until every queued call has gone to Redis and been answered, or ctx ends: an instance that
// drains calls it before it exits, so the count-offs of its sockets are not lost with the process.
func (q *Queue) Settle(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !q.calls.idle() || !q.checks.idle() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("queue: settle: %w", ctx.Err())
		case <-tick.C:
		}
	}
	return nil
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

// scriptCall is one script run on its way to Redis in a pipeline with others (a registration, a socket
// counted off).
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	// resends is how many times the call may go out again when its pipeline gets no answer: only for a
	// script that is safe to run twice (a count-off, which marks that it ran); 0 for the others. resent is
	// how many times it has.
	resends int
	resent  int
	done    chan struct{}
	res     any
	err     error
}

// runBatched runs script with keys and args in the next pipeline and returns its reply. A pipeline that
// gets no answer within batchTimeout is not sent again: its scripts may have run, and a registration's count
// is not safe to change twice. (A count-off is: runResent.)
func (q *Queue) runBatched(ctx context.Context, script *redis.Script, keys []string, args ...any) (any, error) {
	return q.run(ctx, &scriptCall{script: script, keys: keys, args: args})
}

// runResent is runBatched for a script that is safe to run twice: without an answer it goes out again, up
// to resends more times, resendAfter apart and further.
func (q *Queue) runResent(ctx context.Context, resends int, script *redis.Script, keys []string, args ...any) (any, error) {
	return q.run(ctx, &scriptCall{script: script, keys: keys, args: args, resends: resends})
}

func (q *Queue) run(ctx context.Context, c *scriptCall) (any, error) {
	c.done = make(chan struct{})
	q.calls.add(c)
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		// The call still goes out (and out again, if it may); only its reply goes nowhere.
		return nil, fmt.Errorf("%w: %w", ErrQueued, ctx.Err())
	}
}

// resendAfter is the wait before a call's first resend; it doubles with each one.
const resendAfter = 250 * time.Millisecond

// unanswered reports whether err says Redis did not answer (a timeout, a broken connection) or refused to
// run anything for now (loading its data set, a cluster slot moving or down), so the call may not have run
// and, if it is safe to repeat, is worth sending again. A script's own error is an answer.
func unanswered(err error) bool {
	if err == nil {
		return false
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return true
	}
	for _, prefix := range []string{"LOADING", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

func (q *Queue) sendScripts(batch []*scriptCall) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	again := q.pipeScripts(ctx, batch)
	if len(again) > 0 {
		// Redis does not know a script (restarted, or flushed): load each once and send those again.
		var loadErr error
		loaded := map[*redis.Script]bool{}
		for _, c := range again {
			if !loaded[c.script] {
				loaded[c.script] = true
				if err := c.script.Load(ctx, q.rdb).Err(); err != nil {
					loadErr = err
				}
			}
		}
		if loadErr != nil {
			for _, c := range again {
				c.err = loadErr
			}
		} else if still := q.pipeScripts(ctx, again); len(still) > 0 {
			for _, c := range still {
				c.res, c.err = c.script.Run(ctx, q.rdb, c.keys, c.args...).Result()
			}
		}
	}
	for _, c := range batch {
		if c.resends > 0 && unanswered(c.err) {
			if c.resent < c.resends {
				c.resent++
				if q.metrics != nil {
					q.metrics.CountOffResends.Inc()
				}
				q.calls.addLater(c, resendAfter<<(c.resent-1))
				continue
			}
			if q.metrics != nil {
				q.metrics.CountOffsLost.Inc()
			}
		}
		close(c.done)
	}
}

// pipeScripts sends batch as one pipeline and fills in every reply, but for the calls Redis answered
// NOSCRIPT, which it returns.
func (q *Queue) pipeScripts(ctx context.Context, batch []*scriptCall) (noScript []*scriptCall) {
	cmds := make([]*redis.Cmd, len(batch))
	pipe := q.rdb.Pipeline()
	for i, c := range batch {
		cmds[i] = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, c := range batch {
		c.res, c.err = cmds[i].Result()
		if c.err != nil && redis.HasErrorPrefix(c.err, "NOSCRIPT") {
			noScript = append(noScript, c)
		}
	}
	return noScript
}
