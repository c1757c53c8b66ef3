// The reverse proxy to the origin: what the gate strips from each request (its cookies, the clients'
// X-Waitroom-* headers) and from each response (the origin's X-Waitroom-* headers, any gate cookie the
// origin tried to set), the protected answers it keeps out of caches, and the release an origin asks for
// (X-Waitroom-Release: 1), which frees the slot.

package gate

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"
)

// ReleaseHeader is the response header by which the origin ends the visitor's admission (value "1").
const ReleaseHeader = "X-Waitroom-Release"

// headerPrefix is the gate's header namespace: never taken from a client, never passed on from the origin.
const headerPrefix = "X-Waitroom-"

// isGateHeader reports whether a header's name is in the gate's namespace, in any case and with '_' for any
// '-': nginx (with underscores_in_headers), CGI and PHP read X-Waitroom_Token as X-Waitroom-Token.
func isGateHeader(name string) bool {
	if len(name) < len(headerPrefix) {
		return false
	}
	for i := range len(headerPrefix) {
		if c := name[i]; c != '_' || headerPrefix[i] != '-' {
			if lower(c) != lower(headerPrefix[i]) {
				return false
			}
		}
	}
	return true
}

// lower is the ASCII letter c in lower case; any other byte as it is.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// The transport's pool to the origin: enough idle connections per host that a busy gate reuses them
// instead of opening one per request.
const (
	maxIdlePerHost = 512
	idleTimeout    = 90 * time.Second
	dialTimeout    = 5 * time.Second
)

// passage is what a request forwarded to the origin carries to its answer (modifyResponse).
type passage struct {
	// adm is the admission it goes with (nil: none needed).
	adm *admission
	// private: the answer is one visitor's, under a protected prefix that is not Cacheable (keepPrivate).
	private bool
}

type passageKey struct{}

func (g *Gate) newProxy() *httputil.ReverseProxy {
	upstream := g.settings.Upstream
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          maxIdlePerHost,
		MaxIdleConnsPerHost:   maxIdlePerHost,
		IdleConnTimeout:       idleTimeout,
		TLSHandshakeTimeout:   dialTimeout,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host // the origin serves the site's own host name
			stripRequest(pr.Out.Header)
		},
		Transport:      transport,
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.proxyError,
		// 0: no timed flush; a streamed answer (no length, or text/event-stream) is flushed as it comes.
		FlushInterval: 0,
	}
}

// forward proxies the request to the origin, with what its answer needs (the zero passage: nothing, an
// unprotected path).
func (g *Gate) forward(w http.ResponseWriter, r *http.Request, p passage) {
	if p != (passage{}) {
		r = r.WithContext(context.WithValue(r.Context(), passageKey{}, &p))
	}
	g.proxy.ServeHTTP(w, r)
}

// keepPrivate marks an answer as one visitor's: no cache, the browser's included, may keep it (after a
// release the browser would show the admitted page again from its cache, and a CDN in front of the gate
// would give one visitor's page, or cookie, to the next), and a cache that keeps it anyway must tell
// visitors apart by their cookies. The headers by which a CDN or nginx is told to cache whatever
// Cache-Control says go.
func keepPrivate(h http.Header) {
	h.Set("Cache-Control", "private, no-store")
	for name := range h {
		if n := strings.ToLower(name); strings.HasSuffix(n, "-cache-control") || n == "surrogate-control" ||
			n == "edge-control" || n == "x-accel-expires" {
			delete(h, name)
		}
	}
	if vary := h.Values("Vary"); !hasToken(vary, "cookie") && !hasToken(vary, "*") {
		h.Add("Vary", "Cookie")
	}
}

// unavailable answers 503: the gate cannot decide the request (its room, or Redis, did not answer).
func unavailable(w http.ResponseWriter) {
	keepPrivate(w.Header())
	http.Error(w, "waiting room unavailable", http.StatusServiceUnavailable)
}

// stripRequest removes the gate's cookies and every header of its namespace (isGateHeader) from a request
// to the origin.
func stripRequest(h http.Header) {
	for name := range h {
		if isGateHeader(name) {
			delete(h, name)
		}
	}
	lines := h.Values("Cookie")
	if len(lines) == 0 {
		return
	}
	var kept []string
	for _, line := range lines {
		for part := range strings.SplitSeq(line, ";") {
			name, _, _ := strings.Cut(part, "=")
			if strings.TrimSpace(part) != "" && !isGateCookie(name) {
				kept = append(kept, strings.TrimSpace(part))
			}
		}
	}
	h.Del("Cookie")
	if len(kept) > 0 {
		h.Set("Cookie", strings.Join(kept, "; "))
	}
}

// modifyResponse strips the gate's namespace from the origin's answer, frees the slot when the origin
// releases the admission, and sets the cookie of an admission given with this request.
func (g *Gate) modifyResponse(resp *http.Response) error {
	release := resp.Header.Get(ReleaseHeader) == "1"
	for name := range resp.Header {
		if isGateHeader(name) {
			delete(resp.Header, name)
		}
	}
	if cookies := resp.Header.Values("Set-Cookie"); len(cookies) > 0 {
		resp.Header.Del("Set-Cookie")
		for _, c := range cookies {
			if name, _, _ := strings.Cut(c, "="); !isGateCookie(name) {
				resp.Header.Add("Set-Cookie", c)
			}
		}
	}
	p, _ := resp.Request.Context().Value(passageKey{}).(*passage)
	if p == nil {
		return nil
	}
	if p.private {
		keepPrivate(resp.Header)
	}
	adm := p.adm
	if adm == nil {
		return nil
	}
	if release {
		g.release(resp.Request.Context(), adm)
		expireCookie(resp.Header, adm.claims.Screening)
		keepPrivate(resp.Header)
		return nil
	}
	if adm.fresh {
		setCookie(resp.Header, adm)
		keepPrivate(resp.Header)
	}
	return nil
}

// release frees adm's slot at once (queue.Finish, as a reservation frees it) and forgets its cookie here.
func (g *Gate) release(ctx context.Context, adm *admission) {
	g.cookies.drop(adm.pass)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	if err := g.lines.Finish(ctx, adm.claims); err != nil {
		g.log.Error("gate: release the slot", "room", adm.claims.Screening, "err", err)
		return
	}
	g.metrics.count(adm.claims.Screening, outcomeReleased)
}

// proxyError answers 502 when the origin cannot be reached; an admission given with the request keeps its
// cookie, so the visitor's retry uses the slot it was given.
func (g *Gate) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return // the visitor went away
	}
	g.log.Warn("gate: origin unreachable", "err", err)
	if p, _ := r.Context().Value(passageKey{}).(*passage); p != nil {
		keepPrivate(w.Header())
		if p.adm != nil && p.adm.fresh {
			setCookie(w.Header(), p.adm)
		}
	}
	http.Error(w, "origin unreachable", http.StatusBadGateway)
}
