// The fleet: the test's server processes, which of them are alive, and the waits that pace the test.

package instances

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// fleet is the test's three processes and what the virtual users share.
type fleet struct {
	t      *testing.T
	env    *testenv.Env
	procs  []*apptest.Process
	client *http.Client
	dialer *websocket.Dialer
	passes *pass.Issuer
	gate   chan struct{} // closed when admitted users may reserve
	stop   chan struct{} // closed when the test ends: every user gives up

	mu    sync.Mutex
	alive []bool
	next  int // round robin over the live instances
}

// pick returns a live instance other than avoid if there is one, round robin; -1 when none is alive.
func (c *fleet) pick(avoid int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	fallback := -1
	for range c.procs {
		i := c.next % len(c.procs)
		c.next++
		if !c.alive[i] {
			continue
		}
		if i != avoid {
			return i
		}
		fallback = i
	}
	return fallback
}

func (c *fleet) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

func (c *fleet) markDead(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alive[i] = false
}

// epoch is the number of the line's last admission event.
func (c *fleet) epoch() int64 {
	n, err := c.env.Redis.Get(context.Background(), queue.Key(c.env.Prefix, screening, "epoch")).Int64()
	if err != nil {
		return 0
	}
	return n
}

func seatIDs() []string {
	var ids []string
	for _, s := range booking.Grid(rows, perRow) {
		ids = append(ids, s.ID)
	}
	return ids
}

// midInterval sleeps until halfway between two ticks, so what follows does not race one.
func midInterval() {
	now := time.Now()
	mid := now.Truncate(interval).Add(interval / 2)
	if mid.Before(now) {
		mid = mid.Add(interval)
	}
	time.Sleep(time.Until(mid))
}
