// The proof of work's HTTP side (the policy, the challenge's making and a payload's check, is package
// entry's): the challenge route (GET /api/screenings/{id}/challenge), and an admission body's pow_cost.

package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
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
	rules, err := s.Entry.Rules(ctx, id)
	if err != nil {
		return err
	}
	ch, err := s.Entry.Challenge(id, rules, now)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, ch)
}

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
	s.Entry.Forget(id)
	return nil
}
