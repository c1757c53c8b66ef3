// The way to the line for a visitor without an admission: a browser is sent to the room's waiting page,
// which brings it back through the enter form once admitted; a JSON client is given a place in the line and
// told how to follow it.

package gate

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/queue"
)

// errorBody is the error of a JSON answer (docs/protocol.md 7.1).
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// waitingAnswer is the JSON answer to a client that asked for JSON, with status 429.
type waitingAnswer struct {
	Error errorBody `json:"error"`
	Room  string    `json:"room"`
	// RoomURL is the waiting room's page for the room, with the way back (to).
	RoomURL string `json:"room_url"`
	// Token is the client's place in the line: it follows it on the socket and collects its pass there.
	Token string `json:"token"`
	// State is "waiting", "pre" (the sale has not opened) or "admitted" (the pass waits on the socket); or
	// "entry", with no token, when a new place needs a proof of work or an access code, which the client
	// brings to the socket.
	State string `json:"state"`
	// Position is the 1-based place in the line while waiting (0 otherwise), of Total waiting.
	Position int64 `json:"position"`
	Total    int64 `json:"total"`
	// Socket is the waiting room's socket for the room, in the form that takes the token in the first
	// message ({"type":"hello","token":…}, docs/protocol.md 4.6), so it never sits in a URL.
	Socket string `json:"socket"`
	// Enter is where the pass is posted (form fields pass, room, to) to get the gate's cookie.
	Enter string `json:"enter"`
}

// toTheLine answers a visitor of st's room who must wait: JSON for a client that asks for it and not for
// HTML, a 303 to the waiting page otherwise.
func (g *Gate) toTheLine(w http.ResponseWriter, r *http.Request, st roomState) {
	keepPrivate(w.Header())
	page := g.roomPage(r, st.room.ID, r.URL.RequestURI())
	if !wantsJSON(r) {
		http.Redirect(w, r, page, http.StatusSeeOther)
		return
	}
	var a waitingAnswer
	a.Error.Code, a.Room, a.RoomURL = "WAITING_ROOM", st.room.ID, page
	a.Socket, a.Enter = g.socketURL(r, st.room.ID), g.enterURL(r)
	if st.guarded {
		// A new place needs a proof of work or an access code, which only the room's socket checks: no
		// place is registered here, so the answer has no token, and the client takes its place on the
		// socket (docs/protocol.md 12).
		a.State = "entry"
		busy(w, st, a, "the site is busy: its waiting room asks a new place for a proof of work or an access code; take one on the socket")
		return
	}
	if !g.settings.Registrations.Allow(g.settings.ClientAddress(r), g.now()) {
		g.overPace(w, r, st, a)
		return
	}
	e, err := g.lines.Enter(r.Context(), st.room.ID, "", st.room.SaleOpensAt)
	if err != nil && !errors.Is(err, queue.ErrClosed) {
		g.log.Error("gate: put a JSON client in line", "room", st.room.ID, "err", err)
		unavailable(w)
		return
	}
	if errors.Is(err, queue.ErrClosed) {
		a.Error.Code, a.State = "SOLD_OUT", "closed"
		a.Error.Message = "the room's line is closed"
		writeJSON(w, http.StatusServiceUnavailable, a)
		return
	}
	// The client has no socket yet: counted off at once, so a client that never follows its place is
	// dropped as abandoned after queue.grace, as a waiting socket that closed would be.
	if derr := g.lines.Disconnected(context.WithoutCancel(r.Context()), st.room.ID, e.Token); derr != nil {
		g.log.Warn("gate: count off a JSON client's registration", "room", st.room.ID, "err", derr)
	}
	a.Token, a.State, a.Total = e.Token, string(e.State), e.Total
	if e.State == queue.Waiting {
		a.Position = e.ZeroBasedRank + 1
	}
	busy(w, st, a, placeMessage)
}

// placeMessage is the message of a JSON answer with a place.
const placeMessage = "the site is busy: you have a place in its waiting room"

// overPace answers a JSON client whose address has used up its pace of new places: 429 RATE_LIMITED, with
// no token and nothing registered. With the infinite queue on it is held instead, as a socket over its
// limits is (docs/protocol.md 12.4): the answer of a new place behind everyone now waiting, whose token is
// registered nowhere, so its position never moves and a bot learns nothing from being caught.
func (g *Gate) overPace(w http.ResponseWriter, r *http.Request, st roomState, a waitingAnswer) {
	if g.settings.InfiniteQueue {
		decoy, err := g.lines.NewDecoy(r.Context(), st.room.ID, g.settings.HoldFor)
		if err != nil {
			g.log.Warn("gate: remember a held place", "room", st.room.ID, "err", err)
		}
		g.metrics.count(st.room.ID, outcomeHeld)
		a.Token, a.State, a.Position, a.Total = decoy.Token, string(decoy.State), decoy.ZeroBasedRank+1, decoy.Total
		busy(w, st, a, placeMessage)
		return
	}
	g.metrics.count(st.room.ID, outcomeRateLimited)
	w.Header().Set("Retry-After", retryAfter(st))
	writeJSON(w, http.StatusTooManyRequests, struct {
		Error errorBody `json:"error"`
	}{errorBody{Code: "RATE_LIMITED", Message: "too many new places from your address; retry later"}})
}

// busy writes a, with message, as a 429 that asks the client to come back after one of the room's ticks.
func busy(w http.ResponseWriter, st roomState, a waitingAnswer, message string) {
	a.Error.Message = message
	w.Header().Set("Retry-After", retryAfter(st))
	writeJSON(w, http.StatusTooManyRequests, a)
}

// retryAfter is one of the room's ticks, in whole seconds (at least one).
func retryAfter(st roomState) string {
	return strconv.Itoa(int(math.Ceil(max(st.s.Interval.Seconds(), 1))))
}

// wantsJSON reports whether the client asked for JSON and not for HTML.
func wantsJSON(r *http.Request) bool {
	json, html := false, false
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json":
			json = true
		case "text/html":
			html = true
		}
	}
	return json && !html
}

// roomPage is the room's waiting page, with the way back to.
func (g *Gate) roomPage(r *http.Request, room, to string) string {
	return g.roomBase(r) + "/s/" + url.PathEscape(room) + "?to=" + url.QueryEscape(to)
}

// roomBase is the waiting room's base URL: gate.room_url, or the host the request reached on the room's
// port (reached).
func (g *Gate) roomBase(r *http.Request) string {
	if g.settings.RoomURL != "" {
		return strings.TrimSuffix(g.settings.RoomURL, "/")
	}
	scheme, host := g.reached(r)
	return scheme + "://" + hostOn(host, g.settings.RoomPort)
}

// socketURL is the room's socket, on the waiting room's host.
func (g *Gate) socketURL(r *http.Request, room string) string {
	base := g.roomBase(r)
	if rest, ok := strings.CutPrefix(base, "https://"); ok {
		base = "wss://" + rest
	} else if rest, ok := strings.CutPrefix(base, "http://"); ok {
		base = "ws://" + rest
	}
	return base + "/ws/screenings/" + url.PathEscape(room) + "?auth=message"
}

// enterURL is the gate's enter form: at gate.public_url, or as the request reached the gate (reached).
func (g *Gate) enterURL(r *http.Request) string {
	if g.settings.PublicURL != "" {
		return strings.TrimSuffix(g.settings.PublicURL, "/") + EnterPath
	}
	scheme, host := g.reached(r)
	return scheme + "://" + host + EnterPath
}

// reached is the scheme and host (with its port, if any) by which the request reached the gate, as far as
// the gate may believe them (limit.Reached: a Host line is believed only from Settings.TrustedProxies).
func (g *Gate) reached(r *http.Request) (scheme, host string) {
	return limit.Reached(r, g.settings.TrustedProxies)
}

// hostOn is the host name of hostport on port.
func hostOn(hostport, port string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
