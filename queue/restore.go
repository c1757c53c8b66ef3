// Rebuilding a line Redis lost from what the instances' sockets know (Standing, Restore), with admission held
// while they put their sockets back.

package queue

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
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

// Standing is what an instance knows of one of its sockets' tokens: its sequence number while waiting, and
// the numbering it is of (0: not known), or the expiry of its admission.
type Standing struct {
	Token     string
	Seq       int64
	Numbering Numbering
	ExpiresAt time.Time
}

// Restore rebuilds the screening's line after Redis lost it (restore.lua): the waiting tokens of standings
// take back their numbers, in their order, and the admitted their slots until their expiry; a number of the
// numbering Redis has now was handed out after the loss, and its token moves behind those put back. It tells every
// instance (EventRebuilt, with the whole line) and returns the line; restored counts the tokens put back
// (-1 when the screening is closed).
func (q *Queue) Restore(ctx context.Context, screening string, standings []Standing) (Line, int64, error) {
	k := q.keys(screening)
	args := make([]any, 0, 3+4*len(standings))
	args = append(args, q.now().UnixMilli(), rebuildHold.Milliseconds(), int64(newNumbering()))
	for _, s := range standings {
		exp := int64(0)
		if !s.ExpiresAt.IsZero() {
			exp = s.ExpiresAt.UnixMilli()
		}
		args = append(args, s.Token, s.Seq, exp, int64(s.Numbering))
	}
	res, err := restoreScript.Run(ctx, q.rdb, []string{k.waiting, k.active, k.seq, k.opened, k.epoch, k.head, k.left, k.leftNew, k.closed, k.hold, k.restored, k.numbering}, args...).Int64Slice()
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

// Numbering names one numbering of a screening's line: drawn at random by the first place the line hands
// out (register.lua) and kept with its sequence counter, so that a line Redis lost, which numbers again
// from 1, draws another. A rebuild tells by it a number of the lost line, which a socket still holds, from
// one the empty Redis handed out after the loss (restore.lua). 0: not known.
type Numbering uint32

// newNumbering draws a numbering, never 0.
func newNumbering() Numbering {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return Numbering(binary.BigEndian.Uint32(b[:])%(1<<32-1) + 1)
}
