// The events instances tell each other over Redis pub/sub (Event, EventKind): publishing one, the probe
// that picks sharded or classic pub/sub, following a screening's events (Subscribe), and the number of its
// last event (Epoch).

package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// EventKind says what an Event reports.
type EventKind string

// The events instances tell each other.
const (
	// EventTick: an admission tick found the line changed (it admitted someone, or people joined or left):
	// the admitted get their pass, the waiting their rank and the total.
	EventTick EventKind = "tick"
	// EventSoldOut: the screening closed.
	EventSoldOut EventKind = "sold_out"
	// EventOpened: the line opened and the pre-queue took its shuffled sequence numbers. It carries the
	// whole line (Left is every number that left above the head), like Queue.Line.
	EventOpened EventKind = "opened"
	// EventRebuilt: an instance rebuilt the line after Redis lost it (Queue.Restore). Like EventOpened it
	// carries the whole line.
	EventRebuilt EventKind = "rebuilt"
	// EventPaused and EventResumed: the operator paused or resumed admission.
	EventPaused  EventKind = "paused"
	EventResumed EventKind = "resumed"
	// EventAllHeld: every seat is held or sold, some only held; the line stays open and waits.
	EventAllHeld EventKind = "all_held"
	// EventReopened: seats came back (an order cancelled or expired) after all_held or sold out; the line is
	// open again, and its epoch moved (instances read it whole).
	EventReopened EventKind = "reopened"
	// EventSeats: seats changed state (held, sold, available again); Seats says how.
	EventSeats EventKind = "seats"
)

// Why a sale closed (Event.Reason on EventSoldOut).
const (
	ReasonSoldOut = "sold_out" // every seat is sold
	ReasonClosed  = "closed"   // the operator closed the sale
	// ReasonReset: the operator reset the sale (Reset). The hub closes the sockets with 1012, to come back
	// with their tokens into the fresh line, rather than telling them the sale is over.
	ReasonReset = "reset"
)

// SeatChange is one seat's new state in an EventSeats: "available", "held" or "sold".
type SeatChange struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// Event travels over Redis pub/sub from the instance that changed a screening to every instance, which
// tells its own sockets.
type Event struct {
	Kind      EventKind `json:"kind"`
	Screening string    `json:"screening"`
	// TickAtMs is the tick's time, Unix ms.
	TickAtMs int64 `json:"tick_at"`
	// Admitted and ExpiresAtMs are set on EventTick.
	Admitted    []string `json:"admitted,omitempty"`
	ExpiresAtMs int64    `json:"expires_at,omitempty"`
	// Total is the line's length right after the tick.
	Total int64 `json:"total"`
	// Epoch, Head, LastSeq and Left move every instance's Line (set on EventTick and EventOpened).
	Epoch   int64   `json:"epoch,omitempty"`
	Head    int64   `json:"head,omitempty"`
	LastSeq int64   `json:"last_seq,omitempty"`
	Left    []int64 `json:"left,omitempty"`
	// Paused is set on an EventTick that moved the line while admission is paused.
	Paused bool `json:"paused,omitempty"`
	// Reason is set on EventSoldOut: ReasonSoldOut or ReasonClosed.
	Reason string `json:"reason,omitempty"`
	// Offers is set on an EventTick that was a waitlist's offer round: the seats offered to each admitted
	// token, in Admitted's order.
	Offers []int `json:"offers,omitempty"`
	// Waitlist is set on an EventSoldOut whose line stays as a waitlist: the sockets stay.
	Waitlist bool `json:"waitlist,omitempty"`
	// Seats is set on EventSeats.
	Seats []SeatChange `json:"seats,omitempty"`
}

// pubsubMode says how events travel: sharded pub/sub (SPUBLISH/SSUBSCRIBE: Redis 7, and what a Redis Cluster
// needs so a message goes only to the shard that owns the screening's slot) or classic pub/sub (the
// in-process Redis, which lacks the sharded commands).
type pubsubMode int

const (
	pubsubUnknown pubsubMode = iota
	pubsubSharded
	pubsubClassic
)

// mode finds out once whether the Redis knows sharded pub/sub, by publishing an empty message on channel (a
// screening's events channel, so on a cluster the probe goes to a node that owns it; listeners skip it).
func (q *Queue) mode(ctx context.Context, channel string) (pubsubMode, error) {
	q.pubsubMu.Lock()
	defer q.pubsubMu.Unlock()
	if q.pubsub != pubsubUnknown {
		return q.pubsub, nil
	}
	err := q.rdb.SPublish(ctx, channel, "").Err()
	switch {
	case err == nil:
		q.pubsub = pubsubSharded
	case strings.Contains(strings.ToLower(err.Error()), "unknown command"):
		q.pubsub = pubsubClassic
	default:
		return pubsubUnknown, fmt.Errorf("queue: probe pub/sub: %w", err)
	}
	return q.pubsub, nil
}

func (q *Queue) publish(ctx context.Context, screening string, ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("queue: publish %s: %w", screening, err)
	}
	channel := q.keys(screening).events
	mode, err := q.mode(ctx, channel)
	if err != nil {
		return err
	}
	if mode == pubsubSharded {
		err = q.rdb.SPublish(ctx, channel, b).Err()
	} else {
		err = q.rdb.Publish(ctx, channel, b).Err()
	}
	if err != nil {
		return fmt.Errorf("queue: publish %s: %w", screening, err)
	}
	return nil
}

// Subscribe delivers the screening's events to fn until ctx ends. It returns nil when ctx ends, and an error
// when it cannot subscribe or Redis ends the subscription (a Redis Cluster does when the screening's slot
// moves): the caller subscribes again. fn runs on Subscribe's goroutine, one event at a time, in the order
// Redis delivers them. subscribed, when not nil, is called on that goroutine once the subscription is in
// place, and again whenever it is restored after a dropped connection (events published while it was down
// are lost, so the caller reads the line whole) or a value arrives on recheck (nil: never).
func (q *Queue) Subscribe(ctx context.Context, screening string, fn func(context.Context, Event), subscribed func(context.Context), recheck <-chan struct{}) error {
	channel := q.keys(screening).events
	mode, err := q.mode(ctx, channel)
	if err != nil {
		return err
	}
	var ps *redis.PubSub
	if mode == pubsubSharded {
		ps = q.rdb.SSubscribe(ctx, channel)
	} else {
		ps = q.rdb.Subscribe(ctx, channel)
	}
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("queue: subscribe %s: %w", screening, err)
	}
	if subscribed != nil {
		subscribed(ctx)
	}
	// With the subscription messages too: Redis ends a sharded subscription by itself (SUNSUBSCRIBE) when the
	// channel's slot moves to another master (resharding, failover); Channel() would hide that and wait forever.
	ch := ps.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-recheck:
			if subscribed != nil {
				subscribed(ctx) // the caller found an event missing with no later one to show the gap
			}
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if (m.Kind == "ssubscribe" || m.Kind == "subscribe") && subscribed != nil {
					// go-redis subscribed again after a dropped connection: events may have been lost.
					subscribed(ctx)
				}
				if m.Kind == "sunsubscribe" || m.Kind == "unsubscribe" {
					if c, ok := q.rdb.(*redis.ClusterClient); ok {
						c.ReloadState(ctx) // the slot has a new owner: learn it before subscribing again
					}
					return fmt.Errorf("queue: subscription to %s ended by Redis (%s): the slot moved", screening, m.Kind)
				}
			case *redis.Message:
				var ev Event
				if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
					continue // not ours to read; nothing we publish fails to decode
				}
				fn(ctx, ev)
			}
		}
	}
}

// Epoch returns the number of the screening's last event (0 before any).
func (q *Queue) Epoch(ctx context.Context, screening string) (int64, error) {
	n, err := q.rdb.Get(ctx, q.keys(screening).epoch).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queue: epoch of %s: %w", screening, err)
	}
	return n, nil
}
