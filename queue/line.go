package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Line is what an instance knows of one screening's line, enough to compute the rank of any waiting
// sequence number without asking Redis: admission pops the lowest sequence numbers, and numbers are dense,
// so for a waiting entry with number s
//
//	rank (1-based) = s − Head − #{n in Left : Head < n < s}
//
// An instance keeps a Line per screening it has sockets for: it applies each admission Event in order
// (Apply), and reads a fresh one from Redis (Queue.Line) when it starts or finds an event missing.
type Line struct {
	// Epoch numbers the last event applied.
	Epoch int64
	// Head is the highest sequence number ever admitted: everyone at or below it has left the line.
	Head int64
	// LastSeq is the last sequence number handed out when the event happened: later numbers joined after it.
	LastSeq int64
	// Total is the line's length.
	Total int64
	// Left holds, sorted, the sequence numbers above Head that left the line (leave, lapse).
	Left []int64
	// Paused is whether admission was paused when the line was read (Queue.Line; events do not set it).
	Paused bool
	// AdmittedAtMs is when the latest admission happened, Unix ms, 0 if none has (Queue.Line; events do not
	// set it).
	AdmittedAtMs int64
	// Closed is whether the screening was sold out when the line was read (Queue.Line; events do not set it).
	Closed bool
}

// Apply moves the line to the event that follows it. It reports false, changing nothing, when ev is not the
// next event (one was missed, or ev is old): the caller reads the line from Redis instead.
func (l *Line) Apply(ev Event) bool {
	// The opening and a rebuild carry the whole line: it replaces what came before, missed events or not.
	// After Redis lost the line its epochs start again below what this instance saw, so a rebuild replaces
	// any other epoch (one that crossed a later tick is set right by that tick's successor: a gap, a read).
	if (ev.Kind == EventOpened && ev.Epoch > l.Epoch) || (ev.Kind == EventRebuilt && ev.Epoch != l.Epoch) {
		*l = Line{Epoch: ev.Epoch, Head: ev.Head, LastSeq: ev.LastSeq, Total: ev.Total, Left: slices.Clone(ev.Left)}
		slices.Sort(l.Left)
		return true
	}
	if ev.Kind != EventTick || ev.Epoch != l.Epoch+1 {
		return false
	}
	l.Epoch, l.Head, l.LastSeq, l.Total = ev.Epoch, ev.Head, ev.LastSeq, ev.Total
	l.Left = append(l.Left, ev.Left...)
	slices.Sort(l.Left)
	l.Left = slices.Compact(l.Left)
	// Numbers at or below the head no longer count: drop them.
	cut, _ := slices.BinarySearch(l.Left, l.Head+1)
	l.Left = l.Left[cut:]
	return true
}

// Rank returns the zero-based rank of the waiting entry with sequence number seq, and false when seq was not
// waiting at the line's last event (admitted, left, or not yet registered).
func (l *Line) Rank(seq int64) (int64, bool) {
	if seq <= l.Head || seq > l.LastSeq {
		return 0, false
	}
	i, found := slices.BinarySearch(l.Left, seq)
	if found {
		return 0, false
	}
	return seq - l.Head - 1 - int64(i), true
}

// Line reads the screening's line from Redis in one script: what an instance needs before it can follow
// events, and again after it missed one.
func (q *Queue) Line(ctx context.Context, screening string) (Line, error) {
	k := q.keys(screening)
	res, err := lineScript.Run(ctx, q.rdb, []string{k.waiting, k.head, k.left, k.epoch, k.seq, k.paused, k.admitAt, k.closed}).Int64Slice()
	if err != nil {
		return Line{}, fmt.Errorf("queue: line of %s: %w", screening, err)
	}
	l := Line{Epoch: res[0], Head: res[1], LastSeq: res[2], Total: res[3], Paused: res[4] == 1, AdmittedAtMs: res[5], Closed: res[6] == 1}
	if len(res) > 7 {
		l.Left = res[7:]
	}
	return l, nil
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
