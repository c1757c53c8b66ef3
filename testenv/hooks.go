// Hooks on a Redis client: counting what it sends, acting on each answer, and losing answers on purpose.

package testenv

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Calls counts what a Redis client sends, once added to it (AddHook): Lua scripts (EVAL, EVALSHA), alone or
// in a pipeline; those sent alone; pipelines; and every command by name (Named).
type Calls struct {
	Scripts, LoneScripts, Pipelines atomic.Int64

	mu    sync.Mutex
	named map[string]int64
}

// Named returns how many commands called name (lower case: "exists") were sent, alone or in a pipeline.
func (c *Calls) Named(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.named[name]
}

func (c *Calls) count(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.named == nil {
		c.named = map[string]int64{}
	}
	for _, cmd := range cmds {
		c.named[cmd.Name()]++
	}
}

// CountCalls adds a Calls to rdb and returns it.
func CountCalls(rdb redis.UniversalClient) *Calls {
	c := &Calls{}
	rdb.AddHook(c)
	return c
}

func (c *Calls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *Calls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		if isScript(cmd) {
			c.Scripts.Add(1)
			c.LoneScripts.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *Calls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.Pipelines.Add(1)
		c.count(cmds...)
		for _, cmd := range cmds {
			if isScript(cmd) {
				c.Scripts.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

func isScript(cmd redis.Cmder) bool {
	n := cmd.Name()
	return n == "evalsha" || n == "eval"
}

// OnReply adds to rdb a hook that calls fn with each command Redis answered without an error, whether sent
// alone or in a pipeline, before the caller sees the answer: a test holds a caller there to make a race
// happen in the order it wants.
func OnReply(rdb redis.UniversalClient, fn func(cmd redis.Cmder)) {
	rdb.AddHook(onReply(fn))
}

type onReply func(cmd redis.Cmder)

func (h onReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h onReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil {
			h(cmd)
		}
		return err
	}
}

func (h onReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cmd.Err() == nil {
				h(cmd)
			}
		}
		return err
	}
}

// Lossy is a hook (rdb.AddHook) that fails the first Fail pipelines carrying Token among their arguments,
// as a Redis that did not answer in time: with Run, Redis runs them first and only the reply is lost;
// without, the request is. Seen counts those pipelines.
type Lossy struct {
	Token string
	Run   bool
	Fail  int64
	Seen  atomic.Int64
}

func (l *Lossy) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (l *Lossy) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (l *Lossy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return slices.Contains(c.Args(), any(l.Token)) }) {
			return next(ctx, cmds)
		}
		if l.Seen.Add(1) > l.Fail {
			return next(ctx, cmds)
		}
		if l.Run {
			_ = next(ctx, cmds)
		}
		lost := errors.New("read tcp 127.0.0.1:6379: i/o timeout")
		for _, c := range cmds {
			c.SetErr(lost)
		}
		return lost
	}
}

// Refuse makes a Redis client fail, without sending them, the commands sent alone whose name (lower case:
// "ping", "publish") is among Names, each with Err: a Redis that does not answer them, or a connection that
// broke just before they went out. Add it to a client of its own, so the test's other calls still reach Redis.
type Refuse struct {
	Names []string
	Err   error
}

func (r Refuse) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r Refuse) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (r Refuse) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if slices.Contains(r.Names, cmd.Name()) {
			cmd.SetErr(r.Err)
			return r.Err
		}
		return next(ctx, cmd)
	}
}
