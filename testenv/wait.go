// WaitFor: a test waits for a condition it can only poll, with a bound.

package testenv

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds, failing the test after limit with what it waited for.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
