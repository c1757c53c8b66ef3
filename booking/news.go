// The seat news: every seat change (held, sold, available again) reaches every instance's admitted sockets,
// gathered per screening and published at most every newsEvery, off the reservation's path. A burst of a
// thousand reservations a second is a few publishes, not a thousand, and no winner waits for one.

package booking

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/waitroom/waitroom/queue"
)

// newsEvery is how long seat changes gather before they go out: a seat map is at most this late.
const newsEvery = 50 * time.Millisecond

// seatNews gathers the seat changes not yet published, per screening.
type seatNews struct {
	mu      sync.Mutex
	pending map[string]map[string]string // screening -> seat -> its latest state
	order   map[string][]string          // screening -> its seats, in the order they first changed
	wake    chan struct{}
}

// add records that seats of the screening are now status (an order's: held, confirmed, or ended), for the
// next publish.
func (n *seatNews) add(screening string, seats []string, status string) {
	state := "available"
	switch status {
	case StatusHeld:
		state = "held"
	case StatusConfirmed:
		state = "sold"
	}
	n.mu.Lock()
	n.initLocked()
	m := n.pending[screening]
	if m == nil {
		m = map[string]string{}
		n.pending[screening] = m
	}
	for _, s := range seats {
		if _, ok := m[s]; !ok {
			n.order[screening] = append(n.order[screening], s)
		}
		m[s] = state
	}
	wake := n.wake
	n.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// take returns the gathered changes and forgets them.
func (n *seatNews) take() map[string][]queue.SeatChange {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pending) == 0 {
		return nil
	}
	out := make(map[string][]queue.SeatChange, len(n.pending))
	for screening, m := range n.pending {
		changes := make([]queue.SeatChange, 0, len(m))
		for _, s := range n.order[screening] {
			changes = append(changes, queue.SeatChange{ID: s, Status: m[s]})
		}
		out[screening] = changes
	}
	clear(n.pending)
	clear(n.order)
	return out
}

// waker is the channel add signals, made on first use.
func (n *seatNews) waker() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.initLocked()
	return n.wake
}

// initLocked makes the maps and the channel on first use; n.mu is held.
func (n *seatNews) initLocked() {
	if n.wake == nil {
		n.pending, n.order, n.wake = map[string]map[string]string{}, map[string][]string{}, make(chan struct{}, 1)
	}
}

// publishNews publishes the gathered seat changes, at most every newsEvery, until ctx ends (and once more
// then, so a drain loses none). A publish that fails is logged: the seat maps catch up at their next read.
func (b *Booking) publishNews(ctx context.Context, log *slog.Logger) {
	wake := b.news.waker()
	for {
		select {
		case <-ctx.Done():
			b.sendNews(context.WithoutCancel(ctx), log)
			return
		case <-wake:
		}
		b.sendNews(ctx, log)
		select {
		case <-ctx.Done():
		case <-time.After(newsEvery):
		}
	}
}

func (b *Booking) sendNews(ctx context.Context, log *slog.Logger) {
	for screening, changes := range b.news.take() {
		if err := b.admissions.PublishSeats(ctx, screening, changes); err != nil && ctx.Err() == nil {
			log.Warn("booking: publish seat changes", "screening", screening, "err", err)
		}
	}
}
