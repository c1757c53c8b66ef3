// One socket's check, run after its hello and before its registration (Socket.Check), on what the hello
// (or an older client's URL) brought: a token that holds its place already passes; a new place needs a
// solution spent once, then a code claimed for its token, both taken back if the registration fails
// (Socket.Undo); a refused code keeps the solution spent, and an address over its wrong codes tries none.

package entry

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
)

// Arrival is what the socket brought before its hello: its screening and that screening's rules, its
// address, why it is over its address's limits ("": it is not; it got this far only because the infinite
// queue may hold it), and what an older client's URL carried (its code and proof of work).
type Arrival struct {
	Screening string
	Addr      string
	Rules     Rules
	OverLimit string
	URLCode   string
	URLAltcha string
}

// Outcome is what a check decided.
type Outcome int

const (
	// Allow registers the socket's token (or Verdict.Token).
	Allow Outcome = iota
	// Refuse turns the socket away, nothing registered.
	Refuse
	// BotHold holds the socket, unregistered, in the infinite queue.
	BotHold
)

// Verdict is what Socket.Check answers.
type Verdict struct {
	Outcome Outcome
	// Token (Allow), when not "", is the token to register instead of the one the client sent (none): the
	// check drew it, because what it spent is bound to it.
	Token string
	// Code and Message (Refuse) are the error the socket is told; Reason, the close's reason; Later, that
	// it is to try again later (a limit, a store not answering) rather than refused for what it brought.
	Code, Message, Reason string
	Later                 bool
	// Decoy and HoldFor (BotHold) are the place the held socket is shown and how long it is held.
	Decoy   queue.Entry
	HoldFor time.Duration
}

// Socket is one socket's check. Check runs once; Undo and BotHoldDone after it.
type Socket struct {
	p *Policy
	a Arrival
	// What Check brought and spent, for Undo: the proof (nil: none), the code, and the token they were
	// spent for ("": nothing to undo).
	proof *proof
	code  string
	spent string
}

// Socket returns the check of a socket that arrived as a.
func (p *Policy) Socket(a Arrival) *Socket { return &Socket{p: p, a: a} }

// The error codes of a socket refused for its access code (docs/protocol.md 12.3), or for a store that did
// not answer.
const (
	CodeCodeRequired = "CODE_REQUIRED"
	CodeCodeInvalid  = "CODE_INVALID"
	CodeCodeUsed     = "CODE_USED"
	// CodeRateLimited is the refusal of a socket over its address's limits or its wrong codes.
	CodeRateLimited = "RATE_LIMITED"
	CodeUnavailable = "UNAVAILABLE"
)

// RetryLater is the message of a socket refused for a limit of its address (reason).
func RetryLater(reason string) string { return reason + "; retry later with your token" }

// rateLimited is the refusal of a socket over its address's limits.
func rateLimited(reason string) Verdict {
	return Verdict{Outcome: Refuse, Code: CodeRateLimited, Message: RetryLater(reason), Reason: "rate limited", Later: true}
}

// Check decides the socket's entry, with the token, code and proof of work (altcha) its hello brought
// (the URL's code and proof when the hello has none): nothing is asked of a screening without rules, nor
// of a token that holds its place (waiting, in the pre-queue, admitted). A new place needs the proof of
// work, spent once in Redis, and then the code, claimed for the place's token (drawn here when the client
// sent none). The solution is spent before the code is looked at, so a spent solution is refused alike
// whatever code came with it, and a refused code keeps it spent: one solution pays for one guess. An
// address over its wrong codes (limits.wrong_codes_per_minute) tries no code at all, held or refused
// whether or not it brought a solution. A socket over its address's limits that brought a valid solution is
// refused at once (RATE_LIMITED): it is no bot to hold, and no exception to the limits.
func (s *Socket) Check(ctx context.Context, token, code, altcha string) Verdict {
	p, a := s.p, s.a
	s.code = cmp.Or(code, a.URLCode)
	var powCode, powWhy string
	if a.Rules.PowCost > 0 {
		s.proof, powCode, powWhy = checkProof(p.pow.Secrets, a.Screening, a.Rules.PowCost, cmp.Or(altcha, a.URLAltcha), p.now())
	}
	if a.OverLimit != "" && s.proof != nil {
		return rateLimited(a.OverLimit)
	}
	suspect := s.proof == nil && (a.OverLimit != "" || p.bots.InfiniteQueue && p.bots.failing(a.Addr, p.now()))
	if a.Rules.Open() && !suspect {
		return Verdict{}
	}
	if token != "" {
		st, err := p.lines.Status(ctx, a.Screening, token)
		if err != nil {
			return p.unavailable("status", a, err)
		}
		if st.State == queue.Waiting || st.State == queue.Pre || st.State == queue.Admitted {
			if a.OverLimit != "" {
				return rateLimited(a.OverLimit)
			}
			if !a.Rules.Open() {
				p.metrics.outcome("kept")
			}
			return Verdict{}
		}
	} else {
		token = queue.NewToken()
	}
	if suspect {
		if v, ok := p.botHold(ctx, a, a.heldReason()); ok {
			return v
		}
		if a.OverLimit != "" {
			return rateLimited(a.OverLimit)
		}
	}
	if a.Rules.Open() {
		return Verdict{Token: token}
	}
	if a.Rules.PowCost > 0 && s.proof == nil {
		return p.refuse(a, powCode, powWhy, true)
	}
	if a.Rules.CodesRequired {
		if s.code == "" {
			return p.refuse(a, CodeCodeRequired, "this line asks for an access code: send it as the hello's code", false)
		}
		if p.wrongCodes.Spent(a.Addr, p.now()) {
			if v, ok := p.botHold(ctx, a, heldWrongCodes); ok {
				return v
			}
			p.metrics.outcome(CodeRateLimited)
			return rateLimited("too many wrong access codes from your address")
		}
	}
	if a.Rules.PowCost > 0 {
		fresh, err := p.lines.SpendSolution(ctx, a.Screening, s.proof.id, s.proof.expires)
		if err != nil {
			return p.unavailable("spend a solution", a, err)
		}
		if !fresh {
			return p.refuse(a, CodePowInvalid, "this solution has bought a place already; solve a new challenge", true)
		}
	}
	if a.Rules.CodesRequired {
		if v, ok := s.claimCode(ctx, token); !ok {
			if v.Code == CodeUnavailable {
				s.unspendSolution() // the code was not judged: the solution may be shown again
			}
			return v
		}
	}
	p.metrics.outcome("ok")
	s.spent = token
	return Verdict{Token: token}
}

// heldReason is why a suspect socket is held: over its address's limits, or from an address that keeps
// failing.
func (a Arrival) heldReason() string {
	if a.OverLimit != "" {
		return heldRateLimited
	}
	return heldFailures
}

// claimCode claims the socket's access code for token: a one-time code is the token's from then on (and
// the same token may claim it again until it has reserved), the shared code lets anyone in. ok false: the
// verdict refusing it. A refused code counts against the address's wrong codes.
func (s *Socket) claimCode(ctx context.Context, token string) (Verdict, bool) {
	p, a := s.p, s.a
	err := p.store.ClaimCode(ctx, a.Screening, s.code, token)
	if err == nil {
		return Verdict{}, true
	}
	code, why := CodeCodeInvalid, "this access code is not valid for this screening (unknown or revoked)"
	switch {
	case errors.Is(err, booking.ErrCodeInvalid):
	case errors.Is(err, booking.ErrCodeUsed):
		code, why = CodeCodeUsed, "this access code has been used for another place already"
	case errors.Is(err, booking.ErrCodeSpent):
		code, why = CodeCodeUsed, "this access code has bought its tickets already: a one-time code buys once"
	default:
		return p.unavailable("claim a code", a, err), false
	}
	p.wrongCodes.Allow(a.Addr, p.now())
	return p.refuse(a, code, why, code == CodeCodeInvalid), false
}

// Undo takes back what an allowing Check spent, for a registration that did not happen after all (sold
// out, Redis not answering): the solution may be shown again, and the code claimed again. Without a spend
// it does nothing.
func (s *Socket) Undo() {
	if s.spent == "" {
		return
	}
	s.unspendSolution() // there is a proof only where the screening asks for a proof of work
	s.releaseCode(s.spent)
}

// BotHoldDone ends a hold Check answered (BotHold): the held socket is gone.
func (s *Socket) BotHoldDone() { s.p.bots.held.Add(-1) }

// unspendSolution takes back the spend of the socket's solution, for a place that was not judged after all.
func (s *Socket) unspendSolution() {
	if s.proof == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), undoWait)
	defer cancel()
	if err := s.p.lines.UnspendSolution(ctx, s.a.Screening, s.proof.id); err != nil {
		s.p.log.Warn("socket: unspend a solution", "screening", s.a.Screening, "err", err)
	}
}

// releaseCode takes back the claim of the socket's code for token, when the place is not given after all.
func (s *Socket) releaseCode(token string) {
	if !s.a.Rules.CodesRequired {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), undoWait)
	defer cancel()
	if err := s.p.store.ReleaseCode(ctx, s.a.Screening, s.code, token); err != nil {
		s.p.log.Warn("socket: release a code", "screening", s.a.Screening, "err", err)
	}
}

// undoWait bounds the undoing of an entry's spend.
const undoWait = 5 * time.Second

// refuse is a verdict that turns the socket away with code, counted; bot says the refusal counts against
// the address's failures (bots.failure_limit).
func (p *Policy) refuse(a Arrival, code, why string, bot bool) Verdict {
	p.metrics.outcome(code)
	if bot {
		p.bots.fail(a.Addr, p.now())
	}
	return Verdict{Outcome: Refuse, Code: code, Message: why, Reason: code}
}

func (p *Policy) unavailable(what string, a Arrival, err error) Verdict {
	if !errors.Is(err, context.Canceled) {
		p.log.Error("socket: entry check: "+what, "screening", a.Screening, "err", err)
	}
	p.metrics.outcome(CodeUnavailable)
	return Verdict{Outcome: Refuse, Code: CodeUnavailable, Message: "the waiting room is unavailable; retry shortly", Reason: CodeUnavailable, Later: true}
}
