// Package embedded owns the no-dependency default that `make run` uses on a fresh machine: an in-process
// Redis (miniredis) whose key TTLs follow the wall clock. It is for one instance; a shared Redis is what
// several instances need.
package embedded

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// clockStep is how often the in-process Redis expires keys: miniredis only ages TTLs when told to.
const clockStep = 50 * time.Millisecond

// Redis is a running in-process Redis.
type Redis struct {
	*miniredis.Miniredis
	stop context.CancelFunc
	done sync.WaitGroup
}

// StartRedis starts an in-process Redis on a loopback port and a clock that ages its TTLs in real time.
func StartRedis() (*Redis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("embedded: start redis: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &Redis{Miniredis: m, stop: stop}
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		t := time.NewTicker(clockStep)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	return r, nil
}

// Close stops the clock and the server.
func (r *Redis) Close() {
	r.stop()
	r.done.Wait()
	r.Miniredis.Close()
}
