// Package gate puts the waiting room in front of an existing site: it serves the site's visitors on a
// listener of its own and proxies them to the origin (gate.upstream). A request under a protected prefix
// (gate.paths) goes through only with the cookie of a live admission to that prefix's room; without one the
// visitor is let straight in while the room has space (mode auto), or sent to the room's waiting page (a
// browser) or told where it stands (a JSON client). Every other path goes to the origin untouched.
//
// Guarantees: the origin never sees a protected request without a live admission for its room (nor a path
// it may read as a protected one: refusedPath, protecting; nor an upgrade but a WebSocket's), nor the
// gate's cookie, nor an X-Waitroom-* header a client sent, in any spelling; a protected answer is never one
// a cache may keep (keepPrivate), unless its prefix says so and it carries no cookie of the gate; a direct
// admission never goes past max_active nor ahead of anyone waiting (queue.AdmitDirect); a JSON client's
// place spends its address's pace of new places, shared with the sockets; a release the origin asks for
// (X-Waitroom-Release: 1) frees the slot at once; a slot freed elsewhere is honoured within cookieRecheck.
//
// Where things are: gate.go (the Gate, its settings, the decision per request), admission.go (the cookie,
// the cache of verified cookies, direct admission), proxy.go (the reverse proxy, what it strips, the
// release), waiting.go (the way to the line: the redirect and the JSON answer), enter.go (the enter form
// the room page posts), metrics.go (the gate's counter).
package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// Prefix is the gate's own path prefix: never proxied.
const Prefix = "/.waitroom/"

// EnterPath takes an admitted visitor's pass (a form POST from the room page) and sets its cookie.
const EnterPath = Prefix + "enter"

// roomTTL is how long a room's mode and settings are kept before they are read again: an operator's change
// reaches every gate within it.
const roomTTL = time.Second

// Lines is what the gate needs of the queue.
type Lines interface {
	AdmitDirect(ctx context.Context, screening string, opensAt time.Time, s queue.Settings) (queue.Direct, error)
	Enter(ctx context.Context, screening, token string, opensAt time.Time) (queue.Entry, error)
	Disconnected(ctx context.Context, screening, token string) error
	NewDecoy(ctx context.Context, screening string, d time.Duration) (queue.Entry, error)
	CheckPass(ctx context.Context, c pass.Claims) error
	Finish(ctx context.Context, c pass.Claims) error
}

// Passes signs and checks the passes the gate's cookie carries.
type Passes interface {
	Issue(screening, token string, expiresAt time.Time) (string, error)
	Verify(pass, screening string) (pass.Claims, error)
}

// Rooms reads a room's mode and settings.
type Rooms interface {
	GateRoom(ctx context.Context, id string) (booking.GateRoom, error)
}

// EntryRules are a room's entry rules as package entry keeps them (entry.Policy, entry.RulesCache). A room
// whose new places need a proof of work or a code lets nobody straight through and registers no place for
// a JSON client: a place is the socket's, with its proof and code.
type EntryRules interface {
	Rules(ctx context.Context, id string) (entry.Rules, error)
}

// Path is one protected prefix and the room its visitors wait in.
type Path struct {
	Prefix string
	Room   string
	// Cacheable keeps the origin's caching headers on the answers the origin gives under the prefix (static
	// files, say); otherwise the gate marks each one private (keepPrivate). An answer that carries the
	// gate's cookie is private whatever this says.
	Cacheable bool
}

// Settings configure a Gate.
type Settings struct {
	// Upstream is the origin.
	Upstream *url.URL
	// Paths are the protected prefixes, longest first (config.Gate.GatePaths).
	Paths []Path
	// RoomURL is the waiting room's public base URL; empty: the host the request reached on RoomPort.
	RoomURL string
	// PublicURL is the gate's own public base URL (gate.public_url); empty: the scheme and host the request
	// reached.
	PublicURL string
	// TrustedProxies are the peers whose Host and X-Forwarded-Proto say how a request reached the gate, for
	// the URLs its answers name when RoomURL or PublicURL is empty (http.trusted_proxies, with
	// http.behind_proxy); from any other peer the gate names its listener's own address. Nil: none.
	TrustedProxies []netip.Prefix
	// RoomPort is the port of http.addr, where the waiting room is served.
	RoomPort string
	// Mode is gate.mode, for a room without a mode of its own.
	Mode string
	// Defaults are the admission settings a room leaves unset.
	Defaults queue.Settings
	// Entry gives each room's entry rules: the cache the room's sockets read too (the instance's
	// entry.Policy), so that an operator's change reaches both at once. Required.
	Entry EntryRules
	// ClientAddress finds a request's client (limit.ClientAddress: the peer, or behind trusted proxies the
	// address they forwarded); nil: the TCP peer.
	ClientAddress func(*http.Request) string
	// Direct paces the direct admissions of one client address (limits.registrations_per_second and
	// registration_burst, as for new sockets); nil: not paced. A visitor over it waits in the line, so a
	// client that throws its cookies away cannot take every free slot of a room.
	Direct *limit.Rate
	// Registrations paces the places the gate registers for JSON clients, per client address: the pace of
	// new sockets, the same *limit.Rate (limits.registrations_per_second and registration_burst), so that an
	// address has one pace whether it asks the gate or a socket; nil: not paced. A client over it gets 429
	// RATE_LIMITED and no place.
	Registrations *limit.Rate
	// InfiniteQueue (bots.infinite_queue) shows a JSON client over Registrations a place behind everyone
	// waiting, with a token registered nowhere, as a held socket is shown, instead of RATE_LIMITED.
	InfiniteQueue bool
	// HoldFor is how long such a place is answered as waiting by the status route (bots.hold).
	HoldFor time.Duration
	// CacheSize bounds the verified cookies kept in memory (0: defaultCacheSize).
	CacheSize int
	// ReadTimeout bounds reading a request that is not a WebSocket upgrade (isWebSocket), its body included
	// (0: no bound). The gate's listener sets none of its own, so an upgraded connection is never cut by it.
	ReadTimeout time.Duration
}

// Gate decides each request and proxies the admitted ones to the origin. It is an http.Handler.
type Gate struct {
	settings Settings
	lines    Lines
	passes   Passes
	rooms    Rooms
	log      *slog.Logger
	proxy    *httputil.ReverseProxy
	cookies  *cookieCache
	metrics  *metrics
	now      func() time.Time
	// known keeps each room's mode and settings for roomTTL; entry, its entry rules.
	known *entry.Cache[roomState]
	entry EntryRules
}

// roomState is a room as last read, or the error its read gave (kept as long, so a room gate.paths names but
// the store does not know costs one read and one log line a second, not one per request).
type roomState struct {
	room booking.GateRoom
	mode string
	s    queue.Settings
	// guarded: a new place needs a proof of work or an access code, which only the room's socket checks
	// (entry.Rules.Open, from the entry rules; not kept in known).
	guarded bool
	err     error
}

// New returns the gate for s over the queue, the passes and the rooms' store; its counter is registered on
// reg (nil: nowhere).
func New(s Settings, lines Lines, passes Passes, rooms Rooms, reg prometheus.Registerer, log *slog.Logger) (*Gate, error) {
	if s.Upstream == nil || (s.Upstream.Scheme != "http" && s.Upstream.Scheme != "https") || s.Upstream.Host == "" {
		return nil, errors.New("gate: upstream: want an http(s) URL")
	}
	if len(s.Paths) == 0 {
		return nil, errors.New("gate: no protected path")
	}
	if s.Entry == nil {
		return nil, errors.New("gate: no entry rules (Settings.Entry)")
	}
	for _, p := range s.Paths {
		if !strings.HasPrefix(p.Prefix, "/") || strings.HasPrefix(p.Prefix, Prefix) || !queue.ValidScreening(p.Room) {
			return nil, fmt.Errorf("gate: path %q=%q: want /prefix=room, outside %s", p.Prefix, p.Room, Prefix)
		}
	}
	if s.CacheSize <= 0 {
		s.CacheSize = defaultCacheSize
	}
	if s.ClientAddress == nil {
		s.ClientAddress = limit.ClientAddress(nil)
	}
	g := &Gate{
		settings: s, lines: lines, passes: passes, rooms: rooms, log: log, now: time.Now,
		cookies: newCookieCache(s.CacheSize), entry: s.Entry,
	}
	clock := func() time.Time { return g.now() } // SetClock moves the rooms' ages too
	g.known = entry.NewCache(roomTTL, clock, g.readRoom)
	g.metrics = newMetrics(reg, s.Paths)
	g.proxy = g.newProxy()
	return g, nil
}

// ServeHTTP decides the request: the gate's own routes, an unprotected path (to the origin), or a protected
// one (through with an admission, or to the line).
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	webSocket := isWebSocket(r)
	if g.settings.ReadTimeout > 0 && !webSocket {
		_ = http.NewResponseController(w).SetReadDeadline(g.now().Add(g.settings.ReadTimeout))
	}
	if !webSocket && asksUpgrade(r.Header) {
		r = withoutUpgrade(r)
	}
	if !strings.HasPrefix(r.RequestURI, "/") {
		// An absolute-form target (GET http://host/… HTTP/1.1) is for a forward proxy, which the gate is not:
		// Go takes its host over the Host line, which a proxy in front may have checked or routed by, and
		// the origin would serve that host. CONNECT's authority form likewise.
		http.Error(w, "absolute-form request", http.StatusBadRequest)
		return
	}
	again := decodedAgain(r.URL.Path)
	if refusedPath(r.URL.Path, again) {
		// The origin might read such a path as a protected one the gate does not see in it.
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	if strings.HasPrefix(r.URL.Path, Prefix) {
		if r.URL.Path == EnterPath {
			g.enter(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	// The origin may read "/a/../checkout" as /checkout: the gate decides on the path the origin will see.
	if clean := cleanPath(r.URL.Path); clean != r.URL.Path {
		u := *r.URL
		u.Path, u.RawPath = clean, ""
		http.Redirect(w, r, u.RequestURI(), http.StatusPermanentRedirect)
		return
	}
	p, ok := g.protecting(r.URL.Path)
	if !ok && again != "" {
		// As an origin that decodes twice reads it ("/%2563heckout" is /checkout there).
		p, ok = g.protecting(cleanPath(again))
	}
	if !ok {
		g.metrics.count("", outcomeUnprotected)
		g.forward(w, r, passage{})
		return
	}
	g.protected(w, r, p)
}

// isWebSocket reports whether r asks for the one upgrade the gate forwards: to a WebSocket alone, on a GET
// without a body. Such a request outlives any read deadline once upgraded, and has nothing to read before.
func isWebSocket(r *http.Request) bool {
	up := r.Header.Values("Upgrade")
	return r.Method == http.MethodGet && r.ContentLength == 0 && len(r.TransferEncoding) == 0 &&
		len(up) == 1 && strings.EqualFold(strings.TrimSpace(up[0]), "websocket") && hasToken(r.Header.Values("Connection"), "upgrade")
}

// asksUpgrade reports whether h asks to switch protocols in any way.
func asksUpgrade(h http.Header) bool {
	return len(h.Values("Upgrade")) > 0 || hasToken(h.Values("Connection"), "upgrade")
}

// withoutUpgrade is r as a plain request: its Upgrade header gone, and "upgrade" out of its Connection.
// Go's reverse proxy forwards any upgrade the client asks for, and an origin that accepts one (h2c, say)
// would take raw requests over the tunnel past every decision of the gate; so only a WebSocket is
// forwarded, and any other upgrade reaches the origin as the plain request it also is.
func withoutUpgrade(r *http.Request) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	r2.Header = r.Header.Clone()
	r2.Header.Del("Upgrade")
	var kept []string
	for _, v := range r2.Header.Values("Connection") {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" && !strings.EqualFold(t, "upgrade") {
				kept = append(kept, t)
			}
		}
	}
	r2.Header.Del("Connection")
	if len(kept) > 0 {
		r2.Header.Set("Connection", strings.Join(kept, ", "))
	}
	return r2
}

// hasToken reports whether the comma-separated header values hold token, in any case.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// SetRoomPort sets the port the waiting room is served on (http.addr's, once it listens), for the
// redirects when gate.room_url is empty. Call it before the gate serves.
func (g *Gate) SetRoomPort(port string) { g.settings.RoomPort = port }

// protected serves a request under the protected prefix p. Every answer is one visitor's, kept out of
// caches (keepPrivate), unless p is Cacheable and the answer the origin's without the gate's cookie; a
// room in passthrough is protected still, so that nothing cached while it was off outlives its turn on.
func (g *Gate) protected(w http.ResponseWriter, r *http.Request, p Path) {
	ctx := r.Context()
	room := p.Room
	st, err := g.room(ctx, room)
	if err != nil {
		// Closed, not open: without its room the gate cannot tell who may pass.
		unavailable(w)
		return
	}
	private := !p.Cacheable
	if st.mode == booking.GatePassthrough {
		g.metrics.count(room, outcomePassthrough)
		g.forward(w, r, passage{private: private})
		return
	}
	adm, had := g.admitted(ctx, r, room)
	if adm != nil {
		g.metrics.count(room, outcomePassed)
		g.forward(w, r, passage{adm: adm, private: private})
		return
	}
	if had {
		g.metrics.count(room, outcomeRefused)
	}
	// A guarded room lets nobody straight through: no place without its proof and code, which the visitor
	// takes on the room's page (or socket).
	direct := st.mode == booking.GateAuto && !st.guarded
	if direct && !g.settings.Direct.Allow(g.settings.ClientAddress(r), g.now()) {
		g.metrics.count(room, outcomeDirectLimited)
	} else if direct {
		adm, err := g.admitDirect(ctx, st)
		if err == nil {
			g.metrics.count(room, outcomeDirect)
			g.forward(w, r, passage{adm: adm, private: private})
			return
		}
		if !errors.Is(err, queue.ErrNoDirect) {
			g.log.Error("gate: direct admission", "room", room, "err", err)
			unavailable(w)
			return
		}
	}
	g.metrics.count(room, outcomeQueued)
	g.toTheLine(w, r, st)
}

// protecting returns the protected prefix p falls under, regardless of case (an origin that ignores case
// must not be reached around the gate). The prefix must end where p does or be followed by a character that
// ends a name for some origin: anything but a letter, a digit, '-' or '_'. So "/checkout/x", "/checkout.json"
// (Rails routes formats), "/checkout " and "/checkout~" are protected; "/checkouts" and "/checkout-old" are
// other paths.
func (g *Gate) protecting(p string) (Path, bool) {
	for _, pp := range g.settings.Paths {
		prefix := strings.TrimSuffix(pp.Prefix, "/")
		if len(p) < len(prefix) || !strings.EqualFold(p[:len(prefix)], prefix) {
			continue
		}
		if len(p) == len(prefix) || prefix == "" || !continuesName(p[len(prefix)]) {
			return pp, true
		}
	}
	return Path{}, false
}

// continuesName reports whether c, after a prefix, makes it another name ("/checkouts", "/checkout-old").
func continuesName(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// refusedPath reports whether the decoded path p holds a character that origins read apart from the gate,
// as it is or percent-encoded once more (for an origin that decodes twice): ';' (Tomcat, Jetty and Spring
// strip ";jsessionid=…" path parameters, so "/checkout;x" is /checkout there), '\' (a separator on Windows
// and to some routers: "/a\..\checkout"), NUL and the other control characters (which some cut a path at).
// The decoded path holds what the client sent both raw and encoded ("%3B" is ';' here); again is p decoded
// once more (decodedAgain).
func refusedPath(p, again string) bool {
	return strings.ContainsFunc(p, isRefusedRune) || strings.ContainsFunc(again, isRefusedRune)
}

// decodedAgain is the decoded path p percent-decoded once more, as an origin that decodes twice reads it;
// "" when p holds no escape (or a malformed one).
func decodedAgain(p string) string {
	if !strings.Contains(p, "%") {
		return ""
	}
	again, err := url.PathUnescape(p)
	if err != nil {
		return ""
	}
	return again
}

func isRefusedRune(c rune) bool {
	return c == ';' || c == '\\' || c < 0x20 || c == 0x7f
}

// cleanPath is p with its dot segments and doubled slashes resolved, its trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// room returns the room's mode and settings, read again once roomTTL has passed, and whether it is guarded
// (its entry rules, from the entry's cache).
func (g *Gate) room(ctx context.Context, id string) (roomState, error) {
	st, err := g.known.Get(ctx, id)
	if err == nil {
		err = st.err
	}
	if err != nil {
		return st, err
	}
	rules, err := g.entry.Rules(ctx, id)
	if err != nil {
		g.log.Error("gate: read the room's entry rules", "room", id, "err", err)
		return roomState{}, fmt.Errorf("gate: room %s: %w", id, err)
	}
	st.guarded = !rules.Open()
	return st, nil
}

// readRoom reads the room's mode and settings for known. A failed read is kept as the state's err, as long
// as a room: it is the room's state too.
func (g *Gate) readRoom(ctx context.Context, id string) (roomState, error) {
	room, err := g.rooms.GateRoom(ctx, id)
	if err != nil {
		g.log.Error("gate: read the room", "room", id, "err", err)
		return roomState{err: fmt.Errorf("gate: room %s: %w", id, err)}, nil
	}
	st := roomState{room: room, mode: room.GateMode, s: room.Admission.Merge(g.settings.Defaults)}
	if st.mode == "" {
		st.mode = g.settings.Mode
	}
	return st, nil
}
