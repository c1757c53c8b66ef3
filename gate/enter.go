// The enter form: the room page posts an admitted visitor's pass here (fields pass, room, to), and the gate
// checks that the form comes from that page, checks the pass, sets its cookie and sends the visitor on to
// where it was going.

package gate

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// maxEnterBytes bounds the enter form: a pass is a few hundred bytes, the way back a URL.
const maxEnterBytes = 8 << 10

func (g *Gate) enter(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !g.fromTheRoom(r) {
		// A form another site posts would push its own admission onto the visitor (login CSRF).
		http.Error(w, "the enter form is taken from the waiting room's page only", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxEnterBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	room, pass, to := r.PostForm.Get("room"), r.PostForm.Get("pass"), safeReturn(r.PostForm.Get("to"))
	if !slices.ContainsFunc(g.settings.Paths, func(p Path) bool { return p.Room == room }) {
		http.Error(w, "unknown room", http.StatusBadRequest)
		return
	}
	keepPrivate(w.Header())
	claims, ok := g.verified(r.Context(), pass, room)
	if !ok {
		// Forged, expired, another room's, or its slot gone: back to the line.
		g.metrics.count(room, outcomeRefused)
		http.Redirect(w, r, g.roomPage(r, room, to), http.StatusSeeOther)
		return
	}
	setCookie(w.Header(), &admission{claims: claims, pass: pass})
	g.metrics.count(room, outcomeEntered)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// fromTheRoom reports whether the enter form comes from the waiting room's page: its Origin is the room's
// (roomBase's scheme, host and port). Without an Origin, Sec-Fetch-Site must say same-origin or same-site;
// a request with neither header is not a browser's (every browser since 2020 sends Origin with a form POST,
// cross-site ones first), and is let in, for the clients that follow their place on the socket.
func (g *Gate) fromTheRoom(r *http.Request) bool {
	if origin := r.Header.Get("Origin"); origin != "" {
		return sameOrigin(origin, g.roomBase(r))
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "same-site":
		return true
	}
	return false
}

// sameOrigin reports whether the URLs a and b have one origin: scheme and host in any case, and one port
// (a scheme's default one when it names none). "null" and anything that is not an http(s) URL is no one's.
// On loopback, "localhost" and the loopback addresses are one host: the room that names its listener's
// 127.0.0.1 is the page a browser opened as localhost (make run prints that), and no other site's page is
// served from this machine's loopback.
func sameOrigin(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false
	}
	sameHost := strings.EqualFold(ua.Hostname(), ub.Hostname()) || loopback(ua.Hostname()) && loopback(ub.Hostname())
	return ua.Host != "" && strings.EqualFold(ua.Scheme, ub.Scheme) && sameHost &&
		portOf(ua) == portOf(ub) && (strings.EqualFold(ua.Scheme, "http") || strings.EqualFold(ua.Scheme, "https"))
}

// loopback reports whether host names this machine's loopback: "localhost" or a loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// portOf is u's port, or its scheme's default.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// safeReturn is to when it is a path on this site ("/…", not "//host" nor "/\host"), else "/".
func safeReturn(to string) string {
	if !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "//") || strings.HasPrefix(to, "/\\") || strings.ContainsAny(to, "\r\n") {
		return "/"
	}
	u, err := url.Parse(to)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return "/"
	}
	return u.RequestURI()
}
