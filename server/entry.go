// What a socket must bring to take a place: the screening's entry rules (its proof-of-work cost, whether
// it asks for an access code), kept a second per instance, and the check the hub runs after the hello and
// before the registration (entryCheck), on what the hello (or an older client's URL) brought: a token that
// holds its place already passes; a new place needs a solution spent once, then a code claimed for its
// token, both taken back if the registration fails; a refused code keeps the solution spent, and an address
// over its wrong codes tries none.

package server

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
)

// rulesTTL is how long an instance keeps a screening's entry rules: an operator's change reaches every
// socket within it.
const rulesTTL = time.Second

// entryRules are a screening's effective rules.
type entryRules struct {
	powCost       int // 0: no proof of work
	codesRequired bool
}

func (r entryRules) open() bool { return r.powCost == 0 && !r.codesRequired }

// entryCache keeps each screening's rules for rulesTTL; the requests that miss together share one read.
type entryCache struct {
	read    func(ctx context.Context, id string) (entryRules, error)
	mu      sync.Mutex
	kept    map[string]keptRules
	loading singleflight.Group
}

type keptRules struct {
	rules entryRules
	at    time.Time
}

func newEntryCache(read func(ctx context.Context, id string) (entryRules, error)) *entryCache {
	return &entryCache{read: read, kept: map[string]keptRules{}}
}

func (e *entryCache) rules(ctx context.Context, id string) (entryRules, error) {
	now := time.Now()
	e.mu.Lock()
	k, ok := e.kept[id]
	e.mu.Unlock()
	if ok && now.Sub(k.at) < rulesTTL {
		return k.rules, nil
	}
	v, err, _ := e.loading.Do(id, func() (any, error) {
		// The read is shared by every request that missed together: the first one's client leaving must
		// not fail the others, so it is bounded by rulesReadWait instead of by that client.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rulesReadWait)
		defer cancel()
		r, err := e.read(rctx, id)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		e.kept[id] = keptRules{rules: r, at: time.Now()}
		if len(e.kept) > maxKeptRules {
			clear(e.kept) // screenings come and go; a map of them all is kept from growing for ever
		}
		e.mu.Unlock()
		return r, nil
	})
	if err != nil {
		return entryRules{}, err
	}
	return v.(entryRules), nil
}

const maxKeptRules = 10_000

// rulesReadWait bounds the read of a screening's rules.
const rulesReadWait = 5 * time.Second

// forget drops what is kept of the screening: an operator's change here applies at once.
func (e *entryCache) forget(id string) {
	e.mu.Lock()
	delete(e.kept, id)
	e.mu.Unlock()
}

// readRules reads a screening's rules from the store, its own cost or pow.cost.
func (s *Server) readRules(ctx context.Context, id string) (entryRules, error) {
	r, err := s.Store.EntryRules(ctx, id)
	if err != nil {
		return entryRules{}, err
	}
	return entryRules{powCost: s.powCostOf(r.PowCost), codesRequired: r.CodesRequired}, nil
}

// arrival is what the socket brought besides its token: its address, its proof of work (verified or
// not) and its access code, from its hello or, for clients before the hello carried them, its URL.
type arrival struct {
	screening string
	addr      string
	rules     entryRules
	proof     *proof
	powCode   string // why proof is nil: codePowRequired or codePowInvalid
	powWhy    string
	code      string
	// overLimit is why the socket is over its address's limits ("": it is not); it got this far only
	// because the infinite queue may hold it.
	overLimit string
}

// brought fills in what the socket brought, once its hello has come: the hello's code and payload, or
// else the URL's (urlCode, urlAltcha), and whether the payload verifies (statelessly; nothing is spent).
func (a arrival) brought(s *Server, hello hub.Hello, urlCode, urlAltcha string, now time.Time) arrival {
	a.code = cmp.Or(hello.Code, urlCode)
	if a.rules.powCost > 0 {
		a.proof, a.powCode, a.powWhy = s.checkProof(a.screening, a.rules.powCost, cmp.Or(hello.Altcha, urlAltcha), now)
	}
	return a
}

// entryCheck is the hub's Arrival.Entry for a socket: nothing is asked of a screening without rules, nor
// of a token that holds its place (waiting, in the pre-queue, admitted). A new place needs the proof of
// work, spent once in Redis, and then the code, claimed for the place's token (drawn here when the client
// sent none). The solution is spent before the code is looked at, so a spent solution is refused alike
// whatever code came with it, and a refused code keeps it spent: one solution pays for one guess. An
// address over its wrong codes (limits.wrong_codes_per_minute) tries no code at all, held or refused
// whether or not it brought a solution. A socket over its address's limits that brought a valid solution is
// refused at once (RATE_LIMITED): it is no bot to hold, and no exception to the limits.
func (s *Server) entryCheck(a arrival, urlCode, urlAltcha string) func(ctx context.Context, hello hub.Hello) hub.Verdict {
	return func(ctx context.Context, hello hub.Hello) hub.Verdict {
		a := a.brought(s, hello, urlCode, urlAltcha, time.Now())
		token := hello.Token
		if a.overLimit != "" && a.proof != nil {
			return hub.Verdict{Refusal: rateLimited(a.overLimit), Code: "rate limited", Close: hub.CloseTryAgainLater}
		}
		suspect := a.proof == nil && (a.overLimit != "" || s.bots.InfiniteQueue && s.bots.failing(a.addr, time.Now()))
		if a.rules.open() && !suspect {
			return hub.Verdict{}
		}
		if token != "" {
			st, err := s.Queue.Status(ctx, a.screening, token)
			if err != nil {
				return s.unavailable("status", a, err)
			}
			if st.State == queue.Waiting || st.State == queue.Pre || st.State == queue.Admitted {
				if a.overLimit != "" {
					return hub.Verdict{Refusal: rateLimited(a.overLimit), Code: "rate limited", Close: hub.CloseTryAgainLater}
				}
				if !a.rules.open() {
					s.entryMetrics.outcome("kept")
				}
				return hub.Verdict{}
			}
		} else {
			token = queue.NewToken()
		}
		if suspect {
			if v, ok := s.holdVerdict(ctx, a, a.heldReason()); ok {
				return v
			}
			if a.overLimit != "" {
				return hub.Verdict{Refusal: rateLimited(a.overLimit), Code: "rate limited", Close: hub.CloseTryAgainLater}
			}
		}
		if a.rules.open() {
			return hub.Verdict{Token: token}
		}
		if a.rules.powCost > 0 && a.proof == nil {
			return s.refuse(a, a.powCode, a.powWhy, true)
		}
		if a.rules.codesRequired {
			if a.code == "" {
				return s.refuse(a, codeCodeRequired, "this line asks for an access code: send it as the hello's code", false)
			}
			if s.wrongCodes.Spent(a.addr, time.Now()) {
				if v, ok := s.holdVerdict(ctx, a, heldWrongCodes); ok {
					return v
				}
				s.entryMetrics.outcome(codeRateLimited)
				return hub.Verdict{Refusal: rateLimited("too many wrong access codes from your address"), Code: "rate limited", Close: hub.CloseTryAgainLater}
			}
		}
		if a.rules.powCost > 0 {
			fresh, err := s.Queue.SpendSolution(ctx, a.screening, a.proof.id, a.proof.expires)
			if err != nil {
				return s.unavailable("spend a solution", a, err)
			}
			if !fresh {
				return s.refuse(a, codePowInvalid, "this solution has bought a place already; solve a new challenge", true)
			}
		}
		if a.rules.codesRequired {
			if v, ok := s.claimCode(ctx, a, token); !ok {
				if v.Code == codeUnavailable {
					s.unspendSolution(a) // the code was not judged: the solution may be shown again
				}
				return v
			}
		}
		s.entryMetrics.outcome("ok")
		return hub.Verdict{Token: token, Undo: func() { s.undoEntry(a, token) }}
	}
}

// heldReason is why a suspect socket is held: over its address's limits, or from an address that keeps
// failing.
func (a arrival) heldReason() string {
	if a.overLimit != "" {
		return heldRateLimited
	}
	return heldFailures
}

// The error codes of a socket refused for its access code (docs/protocol.md 12.3).
const (
	codeCodeRequired = "CODE_REQUIRED"
	codeCodeInvalid  = "CODE_INVALID"
	codeCodeUsed     = "CODE_USED"
	// codeRateLimited is the outcome counted for an address refused for its wrong codes.
	codeRateLimited = "RATE_LIMITED"
	codeUnavailable = "UNAVAILABLE"
)

// claimCode claims the socket's access code for token: a one-time code is the token's from then on (and
// the same token may claim it again until it has reserved), the shared code lets anyone in. ok false: the
// verdict refusing it. A refused code counts against the address's wrong codes.
func (s *Server) claimCode(ctx context.Context, a arrival, token string) (hub.Verdict, bool) {
	err := s.Store.ClaimCode(ctx, a.screening, a.code, token)
	if err == nil {
		return hub.Verdict{}, true
	}
	code, why := codeCodeInvalid, "this access code is not valid for this screening (unknown or revoked)"
	switch {
	case errors.Is(err, booking.ErrCodeInvalid):
	case errors.Is(err, booking.ErrCodeUsed):
		code, why = codeCodeUsed, "this access code has been used for another place already"
	case errors.Is(err, booking.ErrCodeSpent):
		code, why = codeCodeUsed, "this access code has bought its tickets already: a one-time code buys once"
	default:
		return s.unavailable("claim a code", a, err), false
	}
	s.wrongCodes.Allow(a.addr, time.Now())
	return s.refuse(a, code, why, code == codeCodeInvalid), false
}

// unspendSolution takes back the spend of the socket's solution, for a place that was not judged after all.
func (s *Server) unspendSolution(a arrival) {
	if a.proof == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), undoWait)
	defer cancel()
	if err := s.Queue.UnspendSolution(ctx, a.screening, a.proof.id); err != nil {
		s.Log.Warn("socket: unspend a solution", "screening", a.screening, "err", err)
	}
}

// releaseCode takes back the claim of the socket's code for token, when the place is not given after all.
func (s *Server) releaseCode(a arrival, token string) {
	if !a.rules.codesRequired {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), undoWait)
	defer cancel()
	if err := s.Store.ReleaseCode(ctx, a.screening, a.code, token); err != nil {
		s.Log.Warn("socket: release a code", "screening", a.screening, "err", err)
	}
}

// undoEntry takes back what entryCheck spent for token, for a registration that did not happen.
func (s *Server) undoEntry(a arrival, token string) {
	s.unspendSolution(a) // there is a proof only where the screening asks for a proof of work
	s.releaseCode(a, token)
}

// undoWait bounds the undoing of an entry's spend.
const undoWait = 5 * time.Second

// refuse is a verdict that turns the socket away with code, counted; bot says the refusal counts against
// the address's failures (bots.failure_limit).
func (s *Server) refuse(a arrival, code, why string, bot bool) hub.Verdict {
	s.entryMetrics.outcome(code)
	if bot {
		s.bots.fail(a.addr, time.Now())
	}
	return hub.Verdict{Refusal: hub.ErrorMessage(code, why), Code: code}
}

func (s *Server) unavailable(what string, a arrival, err error) hub.Verdict {
	if !errors.Is(err, context.Canceled) {
		s.Log.Error("socket: entry check: "+what, "screening", a.screening, "err", err)
	}
	s.entryMetrics.outcome(codeUnavailable)
	return hub.Verdict{Refusal: hub.ErrorMessage(codeUnavailable, "the waiting room is unavailable; retry shortly"), Code: codeUnavailable, Close: hub.CloseTryAgainLater}
}
