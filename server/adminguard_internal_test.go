// A key's guard over time: an address's attempts come back at the bucket's pace.

package server

import (
	"testing"
	"time"
)

func TestAdminAttemptsComeBackAtTheBucketsPace(t *testing.T) {
	g := newKeyGuard(adminKeyName)
	now := time.Unix(1_000_000, 0)
	for i := range keyAttempts {
		if wait, _ := g.attempt("198.51.100.1", now); wait != 0 {
			t.Fatalf("attempt %d = wait %v, want allowed", i+1, wait)
		}
	}
	wait, _ := g.attempt("198.51.100.1", now)
	if want := keyAttemptWindow / keyAttempts; wait != want {
		t.Errorf("attempt past the bucket = wait %v, want %v", wait, want)
	}
	if wait, _ := g.attempt("198.51.100.1", now.Add(wait)); wait != 0 {
		t.Errorf("attempt once the wait is over = wait %v, want allowed", wait)
	}
	if wait, _ := g.attempt("198.51.100.1", now.Add(keyAttemptWindow/keyAttempts+time.Millisecond)); wait == 0 {
		t.Errorf("a second attempt right after = allowed, want a wait (one came back, one was used)")
	}
	// A right key gives its attempt back; an IPv6 /64 is one bucket.
	for range 2 * keyAttempts {
		wait, giveBack := g.attempt("2001:db8::1", now)
		if wait != 0 {
			t.Fatalf("right keys from 2001:db8::1 = wait %v, want never", wait)
		}
		giveBack()
	}
	for range keyAttempts {
		g.attempt("2001:db8::2", now)
	}
	if wait, _ := g.attempt("2001:db8::ffff", now); wait == 0 {
		t.Errorf("an address of a /64 whose attempts are spent = allowed, want a wait")
	}
}
