// The public reads of the API: the screenings, one screening with its line's length, its seat map, and a
// token's standing in its line.

package server

import (
	"bytes"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/web"
)

// screeningView is a screening as the API shows it.
type screeningView struct {
	booking.Summary
	// State is "upcoming" before the sale opens, "on_sale", "all_held" (every seat held or sold, some only
	// held: the line stays open), "sold_out" (every seat sold), or "closed" by the operator (the operator's
	// view also shows "paused").
	State string `json:"state"`
	// SiteWide says the screening is a room without seats, the line in front of a site (the gate's): the
	// pages show it no seat map and no seat counts.
	SiteWide bool `json:"site_wide"`
	// MaxSeats is the most seats one reservation may take.
	MaxSeats int    `json:"max_seats"`
	Waiting  *int64 `json:"waiting,omitempty"`
	Active   *int64 `json:"active,omitempty"`
	// GateEnter is where the room page sends an admitted visitor back to the site (a form POST of the pass
	// to the gate's /.waitroom/enter), for a screening the gate protects (gate.paths); absent otherwise.
	GateEnter string `json:"gate_enter,omitempty"`
	// GateSiteName and GateSiteURL name the site behind the gate (gate.site_name, else the gate's host) and
	// its home page at the gate, where the room page of a screening the gate protects links back to; absent
	// otherwise.
	GateSiteName string `json:"gate_site_name,omitempty"`
	GateSiteURL  string `json:"gate_site_url,omitempty"`
	// PowCost is the proof of work a new place costs, the mean number of key derivations (0: none):
	// solve a challenge of /challenge and bring its payload to the socket (docs/protocol.md 12.2).
	PowCost int `json:"pow_cost"`
	// Waitlist says the screening keeps its line as a waitlist when it sells out (docs/protocol.md 5.4);
	// Notify that a buyer may leave an e-mail address to be told when it is their turn. Set on one
	// screening's view (GET /api/screenings/{id}) and the operator's; absent: false.
	Waitlist bool `json:"waitlist,omitempty"`
	Notify   bool `json:"notify,omitempty"`
}

// GateLinks are what the API says of the gate in front of an existing site (gate.*): which screenings it
// protects and where its enter form is.
type GateLinks struct {
	// Screenings are the screening ids gate.paths names; empty: no gate.
	Screenings []string
	// PublicURL is the gate's public base URL (gate.public_url); empty: the request's host on Port.
	PublicURL string
	// Port is the port of gate.addr.
	Port string
	// Mode is the server's gate.mode, which a screening without a mode of its own follows.
	Mode string
	// SiteName is what the pages call the site (gate.site_name); empty: the gate's host.
	SiteName string
}

// SetGatePort sets the gate's port (gate.addr's, once it listens) for the enter URL. Call it before serving.
func (s *Server) SetGatePort(port string) { s.Gate.Port = port }

// gateLinks are a screening's ways to the gate as the page that asked (request r) reaches it: the enter form
// (gate.EnterPath), and the name and home page of the site behind it; all "" when screening is not behind the
// gate.
func (g GateLinks) gateLinks(r *http.Request, trusted []netip.Prefix, screening string) (enter, siteName, siteHome string) {
	if !slices.Contains(g.Screenings, screening) {
		return "", "", ""
	}
	origin := g.gateOrigin(r, trusted)
	siteName = g.SiteName
	if siteName == "" {
		if u, err := url.Parse(origin); err == nil {
			siteName = u.Hostname()
		}
	}
	return origin + gate.EnterPath, siteName, origin + "/"
}

// gateOrigin is the gate's origin as the page that asked (request r) reaches it: gate.public_url, or the
// host r reached on the gate's port. That host is the request's Host only from a trusted proxy, else this
// listener's own address (limit.Reached): the page's link and its form-action are never another host's,
// whatever Host line or X-Forwarded-Proto came (a cache in front would keep them for everyone).
func (g GateLinks) gateOrigin(r *http.Request, trusted []netip.Prefix) string {
	if g.PublicURL != "" {
		return strings.TrimSuffix(g.PublicURL, "/")
	}
	scheme, host := limit.Reached(r, trusted)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return scheme + "://" + net.JoinHostPort(strings.Trim(host, "[]"), g.Port)
}

// roomPage serves the waiting room's page. With a gate in front of a site, its policy lets the page post an
// admitted visitor's pass to the gate's enter form (and follow the gate's answer back here), and nowhere else.
func (s *Server) roomPage() echo.HandlerFunc {
	b, err := fs.ReadFile(web.FS, "room.html")
	if err != nil {
		panic(err) // the pages are embedded at build time
	}
	return func(c echo.Context) error {
		if len(s.Gate.Screenings) == 0 {
			return c.HTMLBlob(http.StatusOK, b)
		}
		policy := "form-action 'self' " + s.Gate.gateOrigin(c.Request(), s.trustedHosts())
		// The gate takes the enter form only with this page's Origin; under the server's same-origin referrer
		// policy a browser sends "Origin: null" with a POST to another origin. strict-origin names the origin
		// alone, never the page's path or query, and nothing on a downgrade to http.
		c.Response().Header().Set("Referrer-Policy", "strict-origin")
		return c.HTMLBlob(http.StatusOK, bytes.Replace(b, []byte("form-action 'none'"), []byte(policy), 1))
	}
}

// screeningOf is the screening as the API shows it at now, its checkout mode the server's when it has none.
func (s *Server) screeningOf(sum booking.Summary, now time.Time) screeningView {
	if sum.Checkout == "" {
		sum.Checkout = s.Booking.Checkout()
	}
	return screeningView{Summary: sum, State: state(sum, now), SiteWide: sum.SeatsTotal == 0, MaxSeats: s.Booking.MaxSeats(), PowCost: s.Entry.PowCost(sum.PowCost)}
}

func state(sum booking.Summary, now time.Time) string {
	switch {
	case sum.ClosedAt != nil:
		return "closed"
	case sum.SeatsTotal > 0 && sum.SeatsAvailable <= 0 && sum.SeatsHeld > 0:
		return "all_held"
	case sum.SeatsTotal > 0 && sum.SeatsAvailable <= 0:
		return "sold_out" // a site-wide room (no seats) never is
	case now.Before(sum.SaleOpensAt):
		return "upcoming"
	}
	return "on_sale"
}

func (s *Server) listScreenings(c echo.Context) error {
	list, err := s.Store.Screenings(c.Request().Context())
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]screeningView, 0, len(list))
	for _, sum := range list {
		if sum.ArchivedAt != nil {
			continue // put away by the operator: the admin API still lists it, GET /api/screenings/:id still serves it
		}
		out = append(out, s.screeningOf(sum, now))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getScreening(c echo.Context) error {
	ctx := c.Request().Context()
	sum, err := s.Store.Screening(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	waiting, active, err := s.Queue.Counts(ctx, sum.ID)
	if err != nil {
		return err
	}
	v := s.screeningOf(sum, time.Now())
	v.Waiting, v.Active = &waiting, &active
	if v.Waitlist, err = s.Booking.Waitlist(ctx, sum.ID); err != nil {
		return err
	}
	v.Notify = s.Notify.Enabled()
	v.GateEnter, v.GateSiteName, v.GateSiteURL = s.Gate.gateLinks(c.Request(), s.trustedHosts(), sum.ID)
	return c.JSON(http.StatusOK, v)
}

func (s *Server) getSeats(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	seats, err := s.Booking.Seats(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, seats)
}

// queueStatus is GET /api/screenings/{id}/queue/{token}.
type queueStatus struct {
	Status    string `json:"status"`
	Rank      int64  `json:"rank,omitempty"`
	Total     int64  `json:"total"`
	ExpiresAt string `json:"expires_at,omitempty"`
}

func (s *Server) getQueueStatus(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := s.Booking.Exists(ctx, id); err != nil {
		return err
	}
	e, err := s.Queue.Status(ctx, id, c.Param("token"))
	if err != nil {
		return err
	}
	if e.State == queue.Unknown {
		// A token the infinite queue holds is answered as a waiting one, at the place it was shown.
		rank, held, err := s.Queue.Decoy(ctx, id, c.Param("token"))
		if err != nil {
			return err
		}
		if held {
			e.State, e.ZeroBasedRank, e.Total = queue.Waiting, rank, max(e.Total, rank+1)
		}
	}
	out := queueStatus{Status: string(e.State), Total: e.Total}
	switch e.State {
	case queue.Waiting:
		out.Rank = e.ZeroBasedRank + 1
	case queue.Admitted:
		out.ExpiresAt = e.ExpiresAt.UTC().Format(hub.TimeFormat)
	case queue.Closed:
		out.Status = "sold_out"
	}
	return c.JSON(http.StatusOK, out)
}
