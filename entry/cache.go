// The cache of what a screening's entry needs, read from the store at most once a TTL per instance: one
// type for the entry rules (RulesCache) and for the gate's other columns of a room, on an injected clock;
// the requests that miss together share one read.

package entry

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/waitroom/waitroom/overload"
)

// MaxKept bounds the screenings a Cache keeps: screenings come and go, and a map of them all is kept from
// growing for ever.
const MaxKept = 10_000

// readWait bounds a Cache's read of a screening.
const readWait = 5 * time.Second

// Cache keeps each screening's V for its TTL; the requests that miss together share one read. A read that
// fails is not kept; one the database's gate refused (overload.ErrBusy) answers what was kept before, if
// anything was. Safe for concurrent use.
type Cache[V any] struct {
	read    func(ctx context.Context, id string) (V, error)
	ttl     time.Duration
	now     func() time.Time
	mu      sync.Mutex
	kept    map[string]kept[V]
	loading singleflight.Group
}

type kept[V any] struct {
	v  V
	at time.Time
}

// NewCache keeps what read answers for ttl, on the clock now (nil: time.Now).
func NewCache[V any](ttl time.Duration, now func() time.Time, read func(ctx context.Context, id string) (V, error)) *Cache[V] {
	if now == nil {
		now = time.Now
	}
	return &Cache[V]{read: read, ttl: ttl, now: now, kept: map[string]kept[V]{}}
}

// Get returns the screening's V, kept or read now.
func (c *Cache[V]) Get(ctx context.Context, id string) (V, error) {
	now := c.now()
	c.mu.Lock()
	k, ok := c.kept[id]
	c.mu.Unlock()
	if ok && now.Sub(k.at) < c.ttl {
		return k.v, nil
	}
	v, err, _ := c.loading.Do(id, func() (any, error) {
		// The read is shared by every request that missed together: the first one's client leaving must
		// not fail the others, so it is bounded by readWait instead of by that client.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readWait)
		defer cancel()
		v, err := c.read(rctx, id)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.kept[id] = kept[V]{v: v, at: c.now()}
		if len(c.kept) > MaxKept {
			clear(c.kept)
		}
		c.mu.Unlock()
		return v, nil
	})
	if err != nil {
		if ok && errors.Is(err, overload.ErrBusy) {
			// The database's gate turned the read away (a sale's surge, the arrivals' class waited its
			// bound): what was read before stands, rather than refusing every socket that shared the read.
			// It is not renewed, so the next request reads again.
			return k.v, nil
		}
		var zero V
		return zero, err
	}
	return v.(V), nil
}

// Forget drops what is kept of the screening: an operator's change there applies at once on this instance.
func (c *Cache[V]) Forget(id string) {
	c.mu.Lock()
	delete(c.kept, id)
	c.mu.Unlock()
}
