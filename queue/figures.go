// The operator's view: a screening's figures, read in one round trip (Figures), and each instance's last
// report of its sockets (Report, Instances).

package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Figures is a screening's line as the operator sees it, read from Redis in one round trip.
type Figures struct {
	// Waitlist is the waitlist's figures, when the screening keeps one (set by the caller: Queue.Waitlist).
	Waitlist *WaitlistFigures `json:"waitlist,omitempty"`
	Waiting  int64            `json:"waiting"`
	PreQueue int64            `json:"pre_queue"`
	Active   int64            `json:"active"`
	// Admitted and Abandoned count since the line was created, across instances (admit.lua, open.lua).
	Admitted  int64 `json:"admitted_total"`
	Abandoned int64 `json:"abandoned_total"`
	// Skips counts the admissions that admitted nobody, by reason (the lock misses of the instances that did
	// not run a tick are not among them: see the metrics).
	Skips  map[string]int64 `json:"skips"`
	Opened bool             `json:"opened"`
	Paused bool             `json:"paused"`
	Closed bool             `json:"closed"`
}

// Figures reads the screening's figures.
func (q *Queue) Figures(ctx context.Context, screening string) (Figures, error) {
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	waiting := pipe.ZCard(ctx, k.waiting)
	pre := pipe.ZCard(ctx, k.pre)
	active := pipe.ZCount(ctx, k.active, "("+strconv.FormatInt(q.now().UnixMilli(), 10), "+inf")
	stats := pipe.HGetAll(ctx, k.stats)
	flags := pipe.MGet(ctx, k.opened, k.paused, k.closed)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Figures{}, fmt.Errorf("queue: figures of %s: %w", screening, err)
	}
	f := Figures{Waiting: waiting.Val(), PreQueue: pre.Val(), Active: active.Val(), Skips: map[string]int64{}}
	for name, v := range stats.Val() {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch {
		case name == "admitted":
			f.Admitted = n
		case name == "abandoned":
			f.Abandoned = n
		case strings.HasPrefix(name, "skip:"):
			f.Skips[strings.TrimPrefix(name, "skip:")] = n
		}
	}
	v := flags.Val()
	f.Opened, f.Paused, f.Closed = len(v) == 3 && v[0] != nil, len(v) == 3 && v[1] != nil, len(v) == 3 && v[2] != nil
	return f, nil
}

// instanceStale is how long an instance's last report counts: one that stopped reporting (killed) drops out.
const instanceStale = 10 * time.Second

// Instance is one server instance's last report.
type Instance struct {
	ID string `json:"id"`
	// Sockets counts its open sockets, by screening.
	Sockets map[string]int `json:"sockets"`
	AtMs    int64          `json:"at"`
}

func (q *Queue) instancesKey() string { return q.prefix + "instances" }

// Report records this instance's sockets by screening, for the operator's view of every instance.
func (q *Queue) Report(ctx context.Context, id string, sockets map[string]int) error {
	b, err := json.Marshal(Instance{ID: id, Sockets: sockets, AtMs: q.now().UnixMilli()})
	if err != nil {
		return fmt.Errorf("queue: report: %w", err)
	}
	if err := q.rdb.HSet(ctx, q.instancesKey(), id, b).Err(); err != nil {
		return fmt.Errorf("queue: report: %w", err)
	}
	return nil
}

// Instances returns the instances that reported within the last ten seconds, and forgets the others.
func (q *Queue) Instances(ctx context.Context) ([]Instance, error) {
	all, err := q.rdb.HGetAll(ctx, q.instancesKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: instances: %w", err)
	}
	now := q.now().UnixMilli()
	out := []Instance{}
	var stale []string
	for id, v := range all {
		var in Instance
		if json.Unmarshal([]byte(v), &in) != nil || now-in.AtMs > instanceStale.Milliseconds() {
			stale = append(stale, id)
			continue
		}
		out = append(out, in)
	}
	if len(stale) > 0 {
		_ = q.rdb.HDel(ctx, q.instancesKey(), stale...).Err() // tidying: the next read retries
	}
	return out, nil
}
