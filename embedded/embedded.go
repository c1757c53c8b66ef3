// Package embedded owns the no-dependency default that `make run` uses on a fresh machine: an in-process
// Redis (miniredis) whose key TTLs follow the wall clock. It is for one instance; a shared Redis is what
// several instances need.
//
// Guarantee: the in-process Redis listens on loopback and answers only clients that AUTH with its
// password, a random one per start (Password), so another local user cannot admit themself or read the
// line's tokens.
//
// Files: embedded.go.
package embedded

import (
	"context"
	"crypto/rand"
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
	password string
	stop     context.CancelFunc
	done     sync.WaitGroup
}

// StartRedis starts an in-process Redis on a loopback port, requiring a password of its own (Password),
// and a clock that ages its TTLs in real time.
func StartRedis() (*Redis, error) {
	// 128 random bits, as text: the password is only ever handed to this process's own clients.
	password := rand.Text()
	m := miniredis.NewMiniRedis()
	m.RequireAuth(password) // before Start: no client ever reaches it without the password
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("embedded: start redis: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &Redis{Miniredis: m, password: password, stop: stop}
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

// Password is what a client must AUTH with (go-redis: Options.Password).
func (r *Redis) Password() string { return r.password }

// Close stops the clock and the server.
func (r *Redis) Close() {
	r.stop()
	r.done.Wait()
	r.Miniredis.Close()
}
