// Rebuilding a line Redis lost from what the instances' sockets know (Standing, Restore), with admission held
// while they put their sockets back.

package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/restore.lua
	restoreLua string

	restoreScript = redis.NewScript(restoreLua)
)

// rebuildHold is how long admission waits after the first instance rebuilds a line Redis lost, so the other
// instances' sockets are back before anyone is admitted: each instance finds the loss within a couple of
// seconds (its subscription and its line read retry every second). Short enough that admission resumes
// within 5 s of Redis's return (docs/reliability.md).
const rebuildHold = 3 * time.Second

// Standing is what an instance knows of one of its sockets' tokens: its sequence number while waiting, or
// the expiry of its admission.
type Standing struct {
	Token     string
	Seq       int64
	ExpiresAt time.Time
}

// Restore rebuilds the screening's line after Redis lost it (restore.lua): the waiting tokens of standings
// take back their numbers, in their order, and the admitted their slots until their expiry. It tells every
// instance (EventRebuilt, with the whole line) and returns the line; restored counts the tokens put back
// (-1 when the screening is closed).
func (q *Queue) Restore(ctx context.Context, screening string, standings []Standing) (Line, int64, error) {
	k := q.keys(screening)
	args := make([]any, 0, 2+3*len(standings))
	args = append(args, q.now().UnixMilli(), rebuildHold.Milliseconds())
	for _, s := range standings {
		exp := int64(0)
		if !s.ExpiresAt.IsZero() {
			exp = s.ExpiresAt.UnixMilli()
		}
		args = append(args, s.Token, s.Seq, exp)
	}
	res, err := restoreScript.Run(ctx, q.rdb, []string{k.waiting, k.active, k.seq, k.opened, k.epoch, k.head, k.left, k.leftNew, k.closed, k.hold, k.restored}, args...).Int64Slice()
	if err != nil {
		return Line{}, 0, fmt.Errorf("queue: restore %s: %w", screening, err)
	}
	if res[0] < 0 {
		return Line{}, -1, nil
	}
	l := Line{Epoch: res[1], Head: res[2], LastSeq: res[3], Total: res[4], Left: res[5:]}
	ev := Event{Kind: EventRebuilt, Screening: screening, TickAtMs: q.now().UnixMilli(), Total: l.Total,
		Epoch: l.Epoch, Head: l.Head, LastSeq: l.LastSeq, Left: l.Left}
	if err := q.publish(ctx, screening, ev); err != nil {
		return l, res[0], fmt.Errorf("queue: rebuilt %s but could not tell the instances: %w", screening, err)
	}
	return l, res[0], nil
}
