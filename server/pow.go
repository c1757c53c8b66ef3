// The proof of work a screening may ask of a socket before it gets a place (ALTCHA v2, package altcha): the
// challenge route (GET /api/screenings/{id}/challenge), the counter drawn for a cost, and the stateless
// check of the widget's payload a socket brings in its altcha parameter.

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/altcha"
	"github.com/waitroom/waitroom/booking"
)

// Pow is the proof of work the server asks for (pow.*).
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
	codePowRequired = "POW_REQUIRED"
	codePowInvalid  = "POW_INVALID"
)

// challenge answers a fresh challenge for the screening, as the altcha widget expects it. A screening that
// asks for no proof of work still gets one (of the least cost), so a client may always solve. Each address
// may ask as often as it may open sockets (limits.registrations_per_second): issuing costs the server one
// key derivation.
func (s *Server) challenge(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	now := time.Now()
	// The pace comes first, so that a flood of requests for screenings that do not exist reads nothing.
	if !s.challenges.Allow(s.clientIP(c.Request()), now) {
		return tooFast(c, "1", "too many challenges from this address; retry in a second")
	}
	if err := s.Booking.Exists(ctx, id); err != nil {
		return err
	}
	rules, err := s.entry.rules(ctx, id)
	if err != nil {
		return err
	}
	ch, err := altcha.Create(altcha.Options{
		Cost: s.Pow.Iterations, Counter: drawCounter(max(rules.powCost, 1)),
		ExpiresAt: now.Add(s.Pow.Expires), Data: map[string]string{"screening": id, "cost": strconv.Itoa(rules.powCost)},
	}, s.Pow.Secrets)
	if err != nil {
		return fmt.Errorf("challenge for %s: %w", id, err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	s.entryMetrics.challenges.Inc()
	return c.JSON(http.StatusOK, ch)
}

// drawCounter draws the secret counter of a challenge of the cost: uniformly from [cost/2, cost*3/2], at
// least 1, so the client's mean work is the cost and no two clients know in advance who solves first.
func drawCounter(cost int) uint32 {
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
func (s *Server) checkProof(screening string, cost int, payload string, now time.Time) (p *proof, code, why string) {
	if payload == "" {
		return nil, codePowRequired, "this line asks for a proof of work first: solve a challenge of GET /api/screenings/" +
			screening + "/challenge and send the solution's payload as the hello's altcha"
	}
	decoded, err := altcha.DecodePayload(payload)
	if err == nil {
		err = altcha.Verify(decoded, s.Pow.Secrets, now)
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
		return nil, codePowInvalid, proofRefusal(err)
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

// powCostOf is a screening's effective cost: its own, or pow.cost.
func (s *Server) powCostOf(own *int) int { return booking.EffectivePowCost(own, s.Pow.Cost) }

// powCost is an admission body's pow_cost: a cost, or on a PATCH "default" (Default: drop the screening's
// own, follow pow.cost). It is written as the number.
type powCost struct {
	N       int
	Default bool
}

func (p *powCost) UnmarshalJSON(b []byte) error {
	if string(b) == `"default"` {
		*p = powCost{Default: true}
		return nil
	}
	if err := json.Unmarshal(b, &p.N); err != nil {
		return errors.New(`pow_cost: want a whole number of key derivations (0: none) or "default"`)
	}
	return nil
}

func (p powCost) MarshalJSON() ([]byte, error) { return json.Marshal(p.N) }

// String is the cost for the log.
func (p *powCost) String() string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(p.N)
}

// setPowCost applies a PATCH's pow_cost (nil: unchanged), at once on this instance.
func (s *Server) setPowCost(ctx context.Context, id string, p *powCost) error {
	if p == nil {
		return nil
	}
	var own *int
	if !p.Default {
		own = &p.N
	}
	if err := s.Store.SetPowCost(ctx, id, own); err != nil {
		return err
	}
	s.entry.forget(id)
	return nil
}
