package testenv

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Calls counts what a Redis client sends, once added to it (AddHook): Lua scripts (EVAL, EVALSHA), alone or
// in a pipeline; those sent alone; and pipelines.
type Calls struct {
	Scripts, LoneScripts, Pipelines atomic.Int64
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
