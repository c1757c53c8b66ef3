// Tests of the cache of verified cookies (bounded whatever arrives, and a dropped cookie is gone), of the way
// back after the enter form, and of the names of the gate's header namespace.

package gate

import (
	"fmt"
	"testing"
)

func TestTheCookieCacheNeverHoldsMoreThanItsBound(t *testing.T) {
	c := newCookieCache(64)
	for i := range 10000 {
		c.put(fmt.Sprintf("cookie-%d", i), cacheEntry{})
	}
	if n := c.len(); n > 64 {
		t.Errorf("cache holds %d cookies, want at most 64", n)
	}
	c.put("kept", cacheEntry{})
	if _, ok := c.get("kept"); !ok {
		t.Errorf("the newest cookie is not in the cache")
	}
	c.drop("kept")
	if _, ok := c.get("kept"); ok {
		t.Errorf("a dropped cookie is still in the cache")
	}
}

func TestSafeReturnKeepsOnlyPathsOnThisSite(t *testing.T) {
	for in, want := range map[string]string{
		"/checkout?x=1": "/checkout?x=1", "/": "/", "": "/", "https://evil.example/": "/", "//evil.example": "/",
		"/\\evil.example": "/", "checkout": "/", "/a\r\nSet-Cookie: x": "/",
	} {
		if got := safeReturn(in); got != want {
			t.Errorf("safeReturn(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEveryFormOfTheGatesHeaderNamespaceIsTheGates(t *testing.T) {
	for name, want := range map[string]bool{
		"X-Waitroom-Token": true, "X-Waitroom_token": true, "x_waitroom_release": true, "X_WAITROOM-PASS": true,
		"x-waitroom-": true, "X-Waitroom": false, "X-Waitroomy": false, "X-Waitroom.Token": false, "X-Other": false,
		"XWaitroom-Token": false, "X-Waitroom\r-": false,
	} {
		if got := isGateHeader(name); got != want {
			t.Errorf("isGateHeader(%q) = %v, want %v", name, got, want)
		}
	}
}
