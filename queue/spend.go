// Where a pass is checked against its admission in Redis (CheckPass, CheckPassLine: the checks of a burst
// share a pipeline) and spent by a reservation (Finish), which frees its slot.

package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom/pass"
)

var (
	//go:embed lua/finish.lua
	finishLua string

	finishScript = redis.NewScript(offerTakenLua + finishLua)
)

var (
	// ErrNotActive means the pass is well signed but its admission is over (expired or left).
	ErrNotActive = errors.New("admission no longer active")
	// ErrPassSpent means the pass already reserved.
	ErrPassSpent = errors.New("pass already used")
)

// CheckPass tells whether a verified pass may reserve now: its admission must still hold the slot
// (ErrNotActive otherwise) and it must not have reserved already (ErrPassSpent).
func (q *Queue) CheckPass(ctx context.Context, c pass.Claims) error {
	_, err := q.CheckPassLine(ctx, c)
	return err
}

// LineState is what a pass check read of the screening's sale with the pass.
type LineState struct {
	// Closed: the line is closed (sold out, or closed by the operator).
	Closed bool
	// Released counts the seats given back to the sale and its reopenings (ReleasedKey): what an instance
	// remembers sold is stale once it moves.
	Released int64
}

// CheckPassLine is CheckPass that also reports, from the same round trip, the state of the screening's
// line. Checks that arrive together share a pipeline (batcher): a burst of reservations checks a thousand
// passes at once.
func (q *Queue) CheckPassLine(ctx context.Context, c pass.Claims) (LineState, error) {
	k := q.keys(c.Screening)
	pc := &passCheck{active: k.active, spent: k.spent, closed: k.closed, released: k.released, token: c.Token, id: c.ID, done: make(chan struct{})}
	q.checks.add(pc)
	select {
	case <-pc.done:
	case <-ctx.Done():
		return LineState{}, fmt.Errorf("queue: check pass: %w", ctx.Err())
	}
	if pc.err != nil {
		return LineState{}, fmt.Errorf("queue: check pass: %w", pc.err)
	}
	line := LineState{Closed: pc.isClosed, Released: pc.released64}
	if pc.spentFound {
		return line, fmt.Errorf("queue: check pass: %w", ErrPassSpent)
	}
	if !pc.held || pc.heldUntil != c.ExpiresAt.UnixMilli() || !c.ExpiresAt.After(q.now()) {
		return line, fmt.Errorf("queue: check pass: %w", ErrNotActive)
	}
	return line, nil
}

// passCheck is one CheckPassLine on its way: the keys and members it reads, and what Redis answered.
type passCheck struct {
	active, spent, closed, released string
	token, id                       string
	done                            chan struct{}

	held       bool  // the token holds a slot (its score is heldUntil)
	heldUntil  int64 // Unix ms
	spentFound bool  // the pass id is among the spent
	isClosed   bool
	released64 int64
	err        error
}

// sendChecks reads every check of batch in one pipeline: for each, the token's slot and the pass's spent
// mark; and once per screening, after them, the line's closing and its released count, in one MGET (a
// burst's thousand checks are mostly of one screening: one read instead of a thousand).
func (q *Queue) sendChecks(batch []*passCheck) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	type reads struct {
		held, spent *redis.FloatCmd
	}
	cmds := make([]reads, len(batch))
	lines := make(map[string]*redis.SliceCmd, 1) // closed key -> MGET closed, released
	pipe := q.rdb.Pipeline()
	for i, c := range batch {
		cmds[i] = reads{held: pipe.ZScore(ctx, c.active, c.token), spent: pipe.ZScore(ctx, c.spent, c.id)}
	}
	for _, c := range batch {
		if lines[c.closed] == nil {
			lines[c.closed] = pipe.MGet(ctx, c.closed, c.released)
		}
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, c := range batch {
		r, line := cmds[i], lines[c.closed]
		c.err = firstErr(r.held.Err(), r.spent.Err(), line.Err())
		if vals := line.Val(); len(vals) == 2 {
			c.isClosed = vals[0] != nil
			if n, ok := vals[1].(string); ok {
				c.released64, _ = strconv.ParseInt(n, 10, 64)
			}
		}
		c.held, c.heldUntil = r.held.Err() == nil, int64(r.held.Val())
		c.spentFound = r.spent.Err() == nil
		close(c.done)
	}
}

// firstErr is the first error that is not redis.Nil (a missing member or key, which is an answer).
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// Finish records that the pass reserved: it is spent, and its slot is freed at once for the next admission
// (the admission loops running on q here are woken to refill it at once).
func (q *Queue) Finish(ctx context.Context, c pass.Claims) error {
	return q.FinishSeats(ctx, c, 0)
}

// FinishSeats is Finish for a pass that took seats: when it was a waitlist's offer, the offer is taken and
// the seats it offered beyond those go back to the next offer round (admit.lua).
func (q *Queue) FinishSeats(ctx context.Context, c pass.Claims, seats int) error {
	k := q.keys(c.Screening)
	err := finishScript.Run(ctx, q.rdb, []string{k.active, k.spent, k.freed, k.offers, k.offerable, k.wlNews, k.stats, k.avail},
		c.Token, c.ExpiresAt.UnixMilli(), c.ID, seats).Err()
	if err != nil {
		return fmt.Errorf("queue: finish %s: %w", c.Screening, err)
	}
	q.slotFreed(c.Screening)
	return nil
}
