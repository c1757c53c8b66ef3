// The admission a request carries: the gate's cookie (a signed pass bound to the admission), the bounded
// cache of verified cookies that makes the common request a map lookup, and the direct admission of a
// visitor into a free slot.

package gate

import (
	"context"
	"hash/maphash"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/pass"
)

const (
	// CookiePrefix names the gate's cookies: one per room, CookiePrefix + room.
	CookiePrefix = "waitroom_gate_"
	// cookieRecheck is how often a cached cookie's slot is checked in Redis again: a slot freed on another
	// instance (a release, an expiry moved by the operator) stops letting it through within this.
	cookieRecheck = time.Second
	// defaultCacheSize bounds the verified cookies kept (a cookie is about 300 bytes: some 30 MB at most).
	defaultCacheSize = 100000
	// cacheShards spreads the cache's lock (each shard its own map and mutex).
	cacheShards = 32
	// checkTimeout bounds a slot's check, and a release's Finish.
	checkTimeout = 2 * time.Second
)

// admission is a live admission a request carries, or the gate just gave.
type admission struct {
	claims pass.Claims
	pass   string
	// fresh: the gate admitted the visitor with this request; its cookie goes with the response.
	fresh bool
}

// cookieName is room's cookie.
func cookieName(room string) string { return CookiePrefix + room }

// admitted returns the live admission to room the request's cookie carries, if any; had reports that a
// cookie was there (refused, when the admission is nil: forged, expired, another room's, or its slot gone).
func (g *Gate) admitted(ctx context.Context, r *http.Request, room string) (adm *admission, had bool) {
	c, err := r.Cookie(cookieName(room))
	if err != nil || c.Value == "" {
		return nil, false
	}
	claims, ok := g.verified(ctx, c.Value, room)
	if !ok {
		return nil, true
	}
	return &admission{claims: claims, pass: c.Value}, true
}

// verified checks the pass cookie carries for room: from the cache when its slot was checked within cookieRecheck, else its
// signature, audience and expiry (Passes.Verify) and its slot (Lines.CheckPass).
func (g *Gate) verified(ctx context.Context, cookie, room string) (pass.Claims, bool) {
	now := g.now()
	if e, ok := g.cookies.get(cookie); ok && e.claims.Screening == room {
		if !e.claims.ExpiresAt.After(now) {
			g.cookies.drop(cookie)
			return pass.Claims{}, false
		}
		if now.Sub(e.checkedAt) < cookieRecheck {
			return e.claims, true
		}
	}
	claims, err := g.passes.Verify(cookie, room)
	if err != nil || !claims.ExpiresAt.After(now) {
		return pass.Claims{}, false
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if err := g.lines.CheckPass(cctx, claims); err != nil {
		g.cookies.drop(cookie)
		return pass.Claims{}, false
	}
	g.cookies.put(cookie, cacheEntry{claims: claims, checkedAt: now})
	return claims, true
}

// admitDirect lets the visitor into a free slot of the room, with a pass for it, when nobody waits and the
// room has space (queue.AdmitDirect); a refusal wraps queue.ErrNoDirect.
func (g *Gate) admitDirect(ctx context.Context, st roomState) (*admission, error) {
	d, err := g.lines.AdmitDirect(ctx, st.room.ID, st.room.SaleOpensAt, st.s)
	if err != nil {
		return nil, err
	}
	signed, err := g.passes.Issue(st.room.ID, d.Token, d.ExpiresAt)
	if err != nil {
		return nil, err
	}
	claims := pass.Claims{ID: pass.ID(st.room.ID, d.Token, d.ExpiresAt), Token: d.Token, Screening: st.room.ID, ExpiresAt: d.ExpiresAt}
	g.cookies.put(signed, cacheEntry{claims: claims, checkedAt: g.now()})
	return &admission{claims: claims, pass: signed, fresh: true}, nil
}

// setCookie is the cookie of adm: HttpOnly, Secure, SameSite=Lax, for the whole site, until the pass's expiry.
func setCookie(h http.Header, adm *admission) {
	c := &http.Cookie{
		Name: cookieName(adm.claims.Screening), Value: adm.pass, Path: "/", Expires: adm.claims.ExpiresAt,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	}
	h.Add("Set-Cookie", c.String())
}

// expireCookie tells the browser to forget room's cookie.
func expireCookie(h http.Header, room string) {
	c := &http.Cookie{Name: cookieName(room), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}
	h.Add("Set-Cookie", c.String())
}

// isGateCookie reports whether a cookie name is one of the gate's.
func isGateCookie(name string) bool {
	return strings.HasPrefix(strings.TrimSpace(name), CookiePrefix)
}

// cacheEntry is a verified cookie: its claims and when its slot was last found live.
type cacheEntry struct {
	claims    pass.Claims
	checkedAt time.Time
}

// cookieCache keeps verified cookies, by their value, sharded; each shard is bounded, and a full one drops
// an arbitrary entry (map order) for a new one: a dropped cookie is only verified again.
type cookieCache struct {
	shards   [cacheShards]cacheShard
	perShard int
	seed     maphash.Seed // the shard of a cookie: a hash of its value, computed without copying it
}

type cacheShard struct {
	mu sync.Mutex
	m  map[string]cacheEntry
}

func newCookieCache(size int) *cookieCache {
	c := &cookieCache{perShard: max(1, size/cacheShards), seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string]cacheEntry)
	}
	return c
}

func (c *cookieCache) shard(key string) *cacheShard {
	return &c.shards[maphash.String(c.seed, key)%cacheShards]
}

func (c *cookieCache) get(key string) (cacheEntry, bool) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	return e, ok
}

func (c *cookieCache) put(key string, e cacheEntry) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; !ok && len(s.m) >= c.perShard {
		for k := range s.m {
			delete(s.m, k)
			break
		}
	}
	s.m[key] = e
}

func (c *cookieCache) drop(key string) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// len counts the cached cookies.
func (c *cookieCache) len() int {
	n := 0
	for i := range c.shards {
		c.shards[i].mu.Lock()
		n += len(c.shards[i].m)
		c.shards[i].mu.Unlock()
	}
	return n
}
