package queue

import (
	"context"
	"sync"
	"sync/atomic"
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
// queued in. Registrations (register.lua, scripts) and pass checks go this way.
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

// scripts runs one Lua script for many callers: the calls that arrive together go to Redis in one pipeline
// (batcher). Registrations (register.lua) go this way. A reply is what Script.Run(...).Slice() would give.
type scripts struct {
	rdb    redis.UniversalClient
	script *redis.Script
	calls  batcher[scriptCall]
}

// newScripts runs script on rdb for the callers of Run.
func newScripts(rdb redis.UniversalClient, script *redis.Script) *scripts {
	s := &scripts{rdb: rdb, script: script}
	s.calls = batcher[scriptCall]{max: batchSize, send: s.send}
	return s
}

type scriptCall struct {
	keys      []string
	args      []any
	done      chan struct{}
	abandoned atomic.Bool // the caller stopped waiting before the call was sent: it is not sent
	res       []any
	err       error
}

// Run runs the script with keys and args in the next pipeline and returns its reply. A call whose ctx ends
// before its pipeline is sent is not sent; once sent, it runs, and its reply goes nowhere.
func (s *scripts) Run(ctx context.Context, keys []string, args ...any) ([]any, error) {
	c := &scriptCall{keys: keys, args: args, done: make(chan struct{})}
	s.calls.add(c)
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		c.abandoned.Store(true)
		return nil, ctx.Err()
	}
}

func (s *scripts) send(batch []*scriptCall) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	live := batch[:0:0]
	for _, c := range batch {
		if !c.abandoned.Load() {
			live = append(live, c)
		}
	}
	again := s.pipe(ctx, live)
	if len(again) == 0 {
		return
	}
	// Redis does not know the script (restarted, or flushed): load it once and send those again.
	if err := s.script.Load(ctx, s.rdb).Err(); err != nil {
		for _, c := range again {
			c.err = err
		}
		return
	}
	for _, c := range s.pipe(ctx, again) {
		c.res, c.err = s.script.Run(ctx, s.rdb, c.keys, c.args...).Slice()
	}
}

// pipe sends batch as one pipeline and fills in every reply, but for the calls Redis answered NOSCRIPT,
// which it returns.
func (s *scripts) pipe(ctx context.Context, batch []*scriptCall) (noScript []*scriptCall) {
	if len(batch) == 0 {
		return nil
	}
	cmds := make([]*redis.Cmd, len(batch))
	pipe := s.rdb.Pipeline()
	for i, c := range batch {
		cmds[i] = s.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, c := range batch {
		c.res, c.err = cmds[i].Slice()
		if c.err != nil && redis.HasErrorPrefix(c.err, "NOSCRIPT") {
			noScript = append(noScript, c)
		}
	}
	return noScript
}
