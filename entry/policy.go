// Package entry owns the admission policy for a new place in a screening's line: what a socket must bring
// (the screening's entry rules, kept a second per instance and shared with the gate), the proof of work's
// check and its spend, once, the access code's claim, the bots' hold, the per-address wrong-codes rule, and
// the undo of what was spent when the registration fails. It answers allow, refuse (a code, a message, and
// whether to try again later) or hold; it knows nothing of sockets, HTTP or the hub, which run what it
// answers.
//
// Guarantees: a screening whose rules ask nothing, for a socket within its address's limits, costs no check
// at all (Policy.Checks); a token that holds its place already passes; one solution buys one place (or one
// guess at a code); a held socket never loses a real place.
//
// Where things are: policy.go (the Policy, its dependencies and settings), check.go (one socket's check:
// Socket, its Verdict, its undo), rules.go (a screening's rules, the rule Open, their cache), cache.go (the
// cache type, on an injected clock, the requests that miss together sharing one read), pow.go (the proof of
// work: challenges, a payload's check), bots.go (the infinite queue), metrics.go (the entry's metrics).
package entry

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/queue"
)

// Lines is what the entry needs of the queue: a token's place, a solution's spend, a held socket's decoy.
type Lines interface {
	Status(ctx context.Context, screening, token string) (queue.Entry, error)
	SpendSolution(ctx context.Context, screening, id string, expires time.Time) (fresh bool, err error)
	UnspendSolution(ctx context.Context, screening, id string) error
	NewDecoy(ctx context.Context, screening string, d time.Duration) (queue.Entry, error)
}

// Store is what the entry needs of the store: a screening's rules, and the claim of an access code.
type Store interface {
	RulesReader
	ClaimCode(ctx context.Context, screening, code, token string) error
	ReleaseCode(ctx context.Context, screening, code, token string) error
}

// Deps is what a Policy decides with.
type Deps struct {
	Lines Lines
	Store Store
	// Pow is the proof of work a screening may ask (pow.*); Bots, what is done with a socket that looks like
	// a bot's (bots.*).
	Pow  Pow
	Bots Bots
	// WrongCodesPerMinute is how many refused access codes one address may try a minute (bursts of as
	// many); beyond it the address tries no code until its count has refilled (limits.wrong_codes_per_minute).
	WrongCodesPerMinute int
	// Registerer takes the entry's metrics (nil: registered nowhere).
	Registerer prometheus.Registerer
	Log        *slog.Logger
	// Now is the clock of the rules' cache and of the per-address counts; nil: time.Now.
	Now func() time.Time
}

// Policy decides the entry of new places on this instance. Safe for concurrent use.
type Policy struct {
	*RulesCache
	lines      Lines
	store      Store
	pow        Pow
	bots       *botWatch
	wrongCodes *limit.Rate // each address's refused access codes
	metrics    *metrics
	log        *slog.Logger
	now        func() time.Time
}

// New returns the policy of d.
func New(d Deps) *Policy {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	p := &Policy{
		RulesCache: NewRulesCache(d.Store, d.Pow.Cost, now),
		lines:      d.Lines, store: d.Store, pow: d.Pow, bots: newBotWatch(d.Bots),
		wrongCodes: limit.NewRate(float64(d.WrongCodesPerMinute)/60, d.WrongCodesPerMinute),
		log:        d.Log, now: now,
	}
	p.metrics = newMetrics(d.Registerer, &p.bots.held)
	return p
}

// PowCost is a screening's effective proof-of-work cost: own, or pow.cost.
func (p *Policy) PowCost(own *int) int { return EffectivePowCost(own, p.pow.Cost) }

// InfiniteQueue reports whether a socket over its address's limits may be held rather than refused
// (bots.infinite_queue): then it is checked (Checks) once its hello has come.
func (p *Policy) InfiniteQueue() bool { return p.bots.InfiniteQueue }

// Checks reports whether a socket of a screening with rules, within its address's limits or not, needs a
// check at all: not when the rules ask nothing of a new place, the socket is within its limits and the
// infinite queue is off (on, it holds the sockets of an address that keeps failing, whatever the rules).
func (p *Policy) Checks(rules Rules, withinLimits bool) bool {
	return !rules.Open() || !withinLimits || p.bots.InfiniteQueue
}
