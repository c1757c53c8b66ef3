// Admit: users admitted in one tick, with their signed passes, for tests that start past the line.

package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// Admitted is a token admitted by Admit, with its signed pass and its slot's expiry.
type Admitted struct {
	Token     string
	Pass      string
	ExpiresAt time.Time
}

// Admit registers tokens in the screening's line and admits them in one tick at now, as the scheduler
// would (room is made for all of them beside those already active), and signs their passes with passes.
// The same tokens admitted at the same now in another prefix get the same expiry, hence the same pass. The
// result is in the line's order.
func Admit(t testing.TB, q *queue.Queue, passes *pass.Issuer, screening string, now time.Time, tokens ...string) []Admitted {
	t.Helper()
	ctx := context.Background()
	for _, tok := range tokens {
		if _, err := q.Register(ctx, screening, tok); err != nil {
			t.Fatalf("Register(%s) = %v", screening, err)
		}
	}
	_, active, err := q.Counts(ctx, screening)
	if err != nil {
		t.Fatal(err)
	}
	n := len(tokens)
	res, err := q.Admit(ctx, screening, now, queue.Settings{
		BatchSize: n, MaxActive: int(active) + n, ActiveTTL: time.Minute, LockTTL: time.Second, Interval: time.Second,
	})
	if err != nil {
		t.Fatalf("Admit(%s) = %v", screening, err)
	}
	if len(res.Admitted) != n {
		t.Fatalf("Admit(%s) admitted %d (skip %q), want %d", screening, len(res.Admitted), res.Skip, n)
	}
	users := make([]Admitted, n)
	for i, tok := range res.Admitted {
		pass, err := passes.Issue(screening, tok, res.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		users[i] = Admitted{Token: tok, Pass: pass, ExpiresAt: res.ExpiresAt}
	}
	return users
}

// AdmitNew is Admit of n fresh tokens, now.
func AdmitNew(t testing.TB, q *queue.Queue, passes *pass.Issuer, screening string, n int) []Admitted {
	t.Helper()
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = queue.NewToken()
	}
	return Admit(t, q, passes, screening, time.Now(), tokens...)
}
