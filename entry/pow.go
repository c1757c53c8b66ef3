// The proof of work a screening may ask of a socket before it gets a place (ALTCHA v2, package altcha): its
// settings (pow.*), the challenge made for a screening's cost, and the stateless check of the widget's
// payload a socket brings (checkProof); the spend of a solution, once, is the policy's (policy.go).

package entry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/altcha"
)

// Pow is the proof of work asked of a new place (pow.*).
type Pow struct {
	// Cost is the mean number of key derivations of a screening without a cost of its own (0: none).
	Cost int
	// Iterations is the PBKDF2 iteration count of one derivation (the challenge's parameters.cost).
	Iterations int
	// Expires is a challenge's lifetime.
	Expires time.Duration
	// Secrets sign the challenges; every instance has the same.
	Secrets altcha.Secrets
}

// The error codes of a socket refused for its proof of work (docs/protocol.md 12.2).
const (
	CodePowRequired = "POW_REQUIRED"
	CodePowInvalid  = "POW_INVALID"
)

// Challenge makes a fresh challenge of the screening, whose rules are rules, as the altcha widget expects
// it, and counts it. A screening that asks for no proof of work still gets one (of the least cost), so a
// client may always solve.
func (p *Policy) Challenge(screening string, rules Rules, now time.Time) (altcha.Challenge, error) {
	ch, err := altcha.Create(altcha.Options{
		Cost: p.pow.Iterations, Counter: DrawCounter(max(rules.PowCost, 1)),
		ExpiresAt: now.Add(p.pow.Expires), Data: map[string]string{"screening": screening, "cost": strconv.Itoa(rules.PowCost)},
	}, p.pow.Secrets)
	if err != nil {
		return altcha.Challenge{}, fmt.Errorf("challenge for %s: %w", screening, err)
	}
	p.metrics.challenges.Inc()
	return ch, nil
}

// DrawCounter draws the secret counter of a challenge of the cost: uniformly from [cost/2, cost*3/2], at
// least 1, so the client's mean work is the cost and no two clients know in advance who solves first.
func DrawCounter(cost int) uint32 {
	lo, hi := max(cost/2, 1), max(cost+cost/2, 1)
	return uint32(lo + rand.IntN(hi-lo+1))
}

// proof is a solution that verified: which challenge it spends (its signature) and until when that
// challenge lives.
type proof struct {
	id      string
	expires time.Time
}

// checkProof verifies the payload a socket of the screening brings, statelessly: the signature, the
// expiry, the solution, that the challenge was made for this screening, and for a cost at least the
// screening's now (cost): a challenge drawn while the line asked less, say none, is worth no place once the
// operator has raised it. It does not spend it. code and why explain a payload that is missing or does not
// verify.
func checkProof(secrets altcha.Secrets, screening string, cost int, payload string, now time.Time) (p *proof, code, why string) {
	if payload == "" {
		return nil, CodePowRequired, "this line asks for a proof of work first: solve a challenge of GET /api/screenings/" +
			screening + "/challenge and send the solution's payload as the hello's altcha"
	}
	decoded, err := altcha.DecodePayload(payload)
	if err == nil {
		err = altcha.Verify(decoded, secrets, now)
	}
	if err == nil && decoded.Challenge.Parameters.Data["screening"] != screening {
		err = errOtherScreening
	}
	if err == nil {
		// A challenge without a cost (made before challenges said theirs) counts as one of no cost.
		if made, cerr := strconv.Atoi(decoded.Challenge.Parameters.Data["cost"]); cerr != nil || made < cost {
			err = errCheaperChallenge
		}
	}
	if err != nil {
		return nil, CodePowInvalid, proofRefusal(err)
	}
	params := decoded.Challenge.Parameters
	return &proof{id: decoded.Challenge.Signature, expires: time.Unix(params.ExpiresAt, 0)}, "", ""
}

var (
	errOtherScreening   = errors.New("a challenge of another screening")
	errCheaperChallenge = errors.New("a challenge of a lower cost than the screening asks now")
)

// proofRefusal is what a socket whose payload did not verify is told: why, and to solve a new challenge.
func proofRefusal(err error) string {
	why := "the proof of work does not solve its challenge"
	switch {
	case errors.Is(err, altcha.ErrMalformed):
		why = "the altcha parameter is not a solution's payload"
	case errors.Is(err, altcha.ErrExpired):
		why = "the challenge has expired"
	case errors.Is(err, altcha.ErrSignature), errors.Is(err, altcha.ErrUnsupported):
		why = "the challenge is not one this server made"
	case errors.Is(err, errOtherScreening):
		why = "the challenge was made for another screening"
	case errors.Is(err, errCheaperChallenge):
		why = "the challenge was made while the line asked for less work than it does now"
	}
	return why + "; solve a new challenge"
}
