// The quiet treatment of what looks like a bot (bots.*, the "infinite queue"): which sockets are held
// instead of refused (over their address's limits, or from an address that keeps failing the proof of
// work or the access code, then only without a valid solution; from an address over its wrong codes,
// whatever it brought); how many one instance holds; the held token's place, answered as a waiting one's
// (queue's decoys).

package entry

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/limit"
)

// Bots is the infinite queue's settings (bots.*).
type Bots struct {
	// InfiniteQueue holds such sockets instead of refusing them.
	InfiniteQueue bool
	// FailureLimit is how many refusals for the proof of work or the code an address may have in a minute.
	FailureLimit int
	// Hold is how long a held socket is kept.
	Hold time.Duration
	// MaxHeld bounds the sockets this instance holds.
	MaxHeld int
}

// botWatch counts each address's failures and the sockets held.
type botWatch struct {
	Bots
	failures *limit.Rate // a failure spends a token; a spent address is failing
	held     atomic.Int64
}

// newBotWatch counts failures against b.FailureLimit a minute; at 0 the rate is nil and counts nothing.
func newBotWatch(b Bots) *botWatch {
	return &botWatch{Bots: b, failures: limit.NewRate(float64(b.FailureLimit)/60, b.FailureLimit)}
}

// fail counts one failure of addr.
func (w *botWatch) fail(addr string, now time.Time) {
	w.failures.Allow(addr, now)
}

// failing reports whether addr used up its failures of the last minute.
func (w *botWatch) failing(addr string, now time.Time) bool {
	return w.failures.Spent(addr, now)
}

// The reasons a socket is held, the label of waitroom_bots_held_total.
const (
	heldRateLimited = "rate_limited"
	heldFailures    = "failures"
	heldWrongCodes  = "wrong_codes"
)

// botHold puts a's socket in the infinite queue for reason when the treatment is on and this instance
// holds fewer than bots.max_held: a BotHold verdict; false when it did not (the caller refuses the socket
// as it would have). The socket is shown a place behind everyone now waiting, which never moves, and a
// token that is registered in no line; the status route answers that token as a waiting one while it is
// held (queue.NewDecoy). The caller has made sure the socket's own token holds no place: a held socket must
// never lose a real one. The hub ends the hold with Socket.BotHoldDone.
func (p *Policy) botHold(ctx context.Context, a Arrival, reason string) (Verdict, bool) {
	w := p.bots
	if !w.InfiniteQueue {
		return Verdict{}, false
	}
	if w.held.Add(1) > int64(w.MaxHeld) {
		w.held.Add(-1)
		return Verdict{}, false
	}
	decoy, err := p.lines.NewDecoy(ctx, a.Screening, w.Hold)
	if err != nil {
		p.log.Warn("socket: remember a held place", "screening", a.Screening, "err", err)
	}
	p.metrics.heldTotal.WithLabelValues(reason).Inc()
	return Verdict{Outcome: BotHold, Decoy: decoy, HoldFor: w.Hold}, true
}
