// What an instance knows of a screening's line (Line): each event applied in order, a rank computed without
// Redis, and the line read whole from Redis (Queue.Line) when an event was missed.

package queue

import (
	"context"
	_ "embed"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/line.lua
	lineLua string

	lineScript = redis.NewScript(lineLua)
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
	// Closed is whether the screening was sold out when the line was read (Queue.Line; events do not set it);
	// Waitlist, instead of Closed, when it was sold out and its line kept as a waitlist (it goes on).
	Closed   bool
	Waitlist bool
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
	res, err := lineScript.Run(ctx, q.rdb, []string{k.waiting, k.head, k.left, k.epoch, k.seq, k.paused, k.admitAt, k.closed, k.wl}).Int64Slice()
	if err != nil {
		return Line{}, fmt.Errorf("queue: line of %s: %w", screening, err)
	}
	l := Line{Epoch: res[0], Head: res[1], LastSeq: res[2], Total: res[3], Paused: res[4] == 1, AdmittedAtMs: res[5], Closed: res[6] == 1,
		Waitlist: res[6] == 2}
	if len(res) > 7 {
		l.Left = res[7:]
	}
	return l, nil
}
