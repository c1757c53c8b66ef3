// Tests of a protected prefix whose answers caches may keep (gate.paths' ";cache").

package gate_test

import (
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/testenv"
)

// gate.paths' ";cache" keeps the origin's caching headers on a prefix (its static files, say), but never
// on an answer that carries the gate's cookie, which no shared cache may hand to another visitor.
func TestACacheablePrefixKeepsTheOriginsCachingButNeverWithTheCookie(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 2, booking.GateAuto, func(s *gate.Settings) {
			s.Paths = append([]gate.Path{{Prefix: "/checkout-static", Room: room, Cacheable: true}}, s.Paths...)
		})
		resp, _ := f.get(t, "/checkout-static/logo.png", "")
		cookie, _ := gateCookie(resp, room)
		if resp.StatusCode != http.StatusOK || cookie == "" {
			t.Fatalf("the first visitor = %d, cookie %q, want 200 and the gate's cookie", resp.StatusCode, cookie)
		}
		wantPrivate(t, "a cacheable prefix's answer with the gate's cookie", resp)
		resp, _ = f.get(t, "/checkout-static/logo.png", cookie)
		wantOrigins(t, "a cacheable prefix's answer to an admitted visitor", resp)
		resp, _ = f.get(t, "/checkout/cart", cookie)
		wantPrivate(t, "the same room's other prefix", resp)
	})
}
