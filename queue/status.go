// Reading where tokens stand, changing nothing: a token's state and place (State, Entry, Status), the
// waiting tokens' sequence numbers (Seqs), and the line's counts (Counts).

package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// State says where a token stands in one screening.
type State string

// The states a token can be in.
const (
	Waiting State = "waiting"
	// Pre: waiting in the pre-queue for the line to open (the sale time), when the order is shuffled.
	Pre      State = "pre"
	Admitted State = "admitted"
	Unknown  State = "unknown"
	Closed   State = "closed"
)

// Entry is a token's standing after Register or Status.
type Entry struct {
	Token string
	State State
	// Inserted is true when Register put the token in line now, false when it was already there.
	Inserted bool
	// ZeroBasedRank is the token's ZRANK in the line (0 = next to be admitted); the wire shows it + 1.
	ZeroBasedRank int64
	// Total is the line's length (ZCARD).
	Total int64
	// Seq is a waiting token's sequence number: its place in the order of arrival, from which every instance
	// computes its rank after each admission (see Line). 0 when not waiting.
	Seq int64
	// Numbering is the numbering Seq belongs to (see Numbering); 0 when not waiting.
	Numbering Numbering
	// Epoch is the number of the last admission event when Register or Status answered (see Line): read
	// before the rest, so the standing is at least as new as that event.
	Epoch int64
	// Paused is true when Register found admission paused by the operator; AllHeld when it found every
	// seat held or sold, some only held (the wait goes on).
	Paused  bool
	AllHeld bool
	// Waitlisted is true when Register found the screening sold out and its line kept as a waitlist: the
	// token waits on it (for an offer, not an admission).
	Waitlisted bool
	// Offer is set on an admitted token whose admission is a waitlist's offer: the seats offered.
	Offer int
	// ClosedReason says why the line is closed when Register found it so: ReasonSoldOut or ReasonClosed.
	ClosedReason string
	// ExpiresAt is when an admitted token's slot (and its pass) lapses.
	ExpiresAt time.Time
	// Receipt is what the token's receipt states about its place, as the admission log recorded it; nil
	// when the log is not kept or holds no record of it (docs/admission-log.md).
	Receipt *Placed

	mark string // a registration's mark, when Enter got no answer (Undo)
}

// Placed is a place as the admission log recorded it: its sequence number in the line (Seq) or, in the
// pre-queue, its entry number (Entry), and when it was taken.
type Placed struct {
	Seq, Entry int64
	At         time.Time
}

// Status reports where token stands without changing anything.
func (q *Queue) Status(ctx context.Context, screening, token string) (Entry, error) {
	if err := q.check(screening, token); err != nil {
		return Entry{}, err
	}
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	epoch := pipe.Get(ctx, k.epoch)
	closed := pipe.Exists(ctx, k.closed)
	pre := pipe.ZScore(ctx, k.pre, token)
	preTotal := pipe.ZCard(ctx, k.pre)
	rank := pipe.ZRank(ctx, k.waiting, token)
	seq := pipe.ZScore(ctx, k.waiting, token)
	total := pipe.ZCard(ctx, k.waiting)
	active := pipe.ZScore(ctx, k.active, token)
	numbering := pipe.Get(ctx, k.numbering)
	offer := pipe.HGet(ctx, k.offers, token)
	wl := pipe.Exists(ctx, k.wl)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Entry{}, fmt.Errorf("queue: status in %s: %w", screening, err)
	}
	e := Entry{Token: token, State: Unknown, Total: total.Val()}
	if epoch.Err() == nil {
		n, err := epoch.Int64()
		if err != nil {
			return Entry{}, fmt.Errorf("queue: status in %s: epoch: %w", screening, err)
		}
		e.Epoch = n
	}
	switch {
	case active.Err() == nil && int64(active.Val()) > q.now().UnixMilli():
		e.State, e.ExpiresAt = Admitted, time.UnixMilli(int64(active.Val()))
		e.Offer, _ = offer.Int()
	case rank.Err() == nil:
		e.State, e.ZeroBasedRank, e.Seq = Waiting, rank.Val(), int64(seq.Val())
		e.Waitlisted = closed.Val() == 1 && wl.Val() == 1
		if n, err := numbering.Uint64(); err == nil {
			e.Numbering = Numbering(n)
		}
	case pre.Err() == nil:
		e.State, e.Total = Pre, preTotal.Val()
	case closed.Val() == 1:
		e.State = Closed
	}
	return e, nil
}

// Counts returns the line's length and the number of admitted users holding a slot now.
func (q *Queue) Counts(ctx context.Context, screening string) (waiting, active int64, err error) {
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	w := pipe.ZCard(ctx, k.waiting)
	a := pipe.ZCount(ctx, k.active, "("+strconv.FormatInt(q.now().UnixMilli(), 10), "+inf")
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, fmt.Errorf("queue: counts in %s: %w", screening, err)
	}
	return w.Val(), a.Val(), nil
}

// Seqs returns each token's sequence number in the screening's line (0 for a token not in it), and the
// numbering they are of (read with the first thousand), in one round trip per thousand tokens: for an
// instance placing the sockets of its pre-queue once the line opens, or renumbering them after a rebuild.
func (q *Queue) Seqs(ctx context.Context, screening string, tokens []string) ([]int64, Numbering, error) {
	const chunk = 1000
	k := q.keys(screening)
	out := make([]int64, len(tokens))
	var numbering Numbering
	for start := 0; start < len(tokens); start += chunk {
		end := min(start+chunk, len(tokens))
		pipe := q.rdb.Pipeline()
		var n *redis.StringCmd
		if start == 0 {
			n = pipe.Get(ctx, k.numbering)
		}
		scores := pipe.ZMScore(ctx, k.waiting, tokens[start:end]...)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, 0, fmt.Errorf("queue: places in %s: %w", screening, err)
		}
		if n != nil && n.Err() == nil {
			v, err := n.Uint64()
			if err != nil {
				return nil, 0, fmt.Errorf("queue: the numbering of %s: %w", screening, err)
			}
			numbering = Numbering(v)
		}
		for i, sc := range scores.Val() {
			out[start+i] = int64(sc)
		}
	}
	return out, numbering, nil
}
