// The enter form: the room page posts an admitted visitor's pass here (fields pass, room, to), and the gate
// checks it, sets its cookie and sends the visitor on to where it was going.

package gate

import (
	"net/http"
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
	w.Header().Set("Cache-Control", "no-store")
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
