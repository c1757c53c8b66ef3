// Tests of the infinite queue: an address that keeps failing the proof of work, or a socket over its
// address's limits, is shown a place that never moves and held, with nothing registered, until its hold
// ends (1013) or the instance drains (1012); a socket with a valid solution never is; the instance's
// bound; the metrics.

package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/testenv"
)

// wantHeld reads the held socket's one message, a place behind everyone, and nothing more until its close.
func wantHeld(t *testing.T, what string, s *testenv.Socket, behind int64) {
	t.Helper()
	m, err := s.Read(5 * time.Second)
	if err != nil || m.Type != "queued" || !m.Inserted || m.Rank != behind+1 || len(m.Token) != 32 {
		t.Fatalf("%s: got %+v, %v; want a queued place behind the %d waiting", what, m, err, behind)
	}
}

func TestAnAddressThatKeepsFailingIsHeldUnlessItSolves(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Bots = config.Bots{InfiniteQueue: true, FailureLimit: 2, Hold: time.Second, MaxHeld: 1}
		})
		for i := range 2 {
			wantRefused(t, "a failure #"+jsonInt(i+1), a.powSocket(t, "s1", "", ""), "POW_REQUIRED")
		}
		held := a.powSocket(t, "s1", "", "")
		wantHeld(t, "the third socket without a solution", held, 0)
		wantRefused(t, "one more while the instance holds its one", a.powSocket(t, "s1", "", ""), "POW_REQUIRED")
		solver := a.powSocket(t, "s1", solved(t, a.challengeOf(t, "s1")), "")
		place := wantPlace(t, "a socket with a solution from the failing address", solver, true)
		if place.Rank != 1 {
			t.Errorf("the solver's rank %d, want 1: the held socket took no place", place.Rank)
		}
		if n := a.waitingIn(t, "s1"); n != 1 {
			t.Errorf("%d wait, want only the solver", n)
		}
		back := a.powSocket(t, "s1", "", place.Token)
		if m, _ := back.Until(t, "queued", 5*time.Second); m.Token != place.Token || m.Inserted {
			t.Errorf("the solver's token reconnecting from the failing address got %+v, want its place, never held", m)
		}
		if code := held.CloseCode(t, 5*time.Second); code != websocket.CloseTryAgainLater {
			t.Errorf("the held socket ended with %d, want 1013 after its hold", code)
		}
		metrics := a.metrics(t)
		for _, want := range []string{`waitroom_bots_held_total{reason="failures"} 1`, "waitroom_bots_held 0"} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// The status route answers a held socket's token as a waiting one's, at the place the socket was shown, so
// the route does not tell a held socket from a waiting one.
func TestAHeldTokenIsAnsweredAsAWaitingOne(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Limits = config.Limits{SocketsPerAddress: 1}
			c.Bots = config.Bots{InfiniteQueue: true, FailureLimit: 100, Hold: time.Minute, MaxHeld: 10}
		})
		first := wantPlace(t, "the address's one socket", a.powSocket(t, "s1", solved(t, a.challengeOf(t, "s1")), ""), true)
		held := a.powSocket(t, "s1", "", "")
		m, err := held.Read(5 * time.Second)
		if err != nil || m.Type != "queued" || m.Rank != 2 {
			t.Fatalf("the socket over the limit got %+v, %v; want a held place 2", m, err)
		}
		var real, decoy struct {
			Status string `json:"status"`
			Rank   int64  `json:"rank"`
			Total  int64  `json:"total"`
		}
		decode(t, "status of the waiting token", a.get(t, "/api/screenings/s1/queue/"+first.Token), &real)
		decode(t, "status of the held token", a.get(t, "/api/screenings/s1/queue/"+m.Token), &decoy)
		if real.Status != "waiting" || real.Rank != 1 {
			t.Errorf("the waiting token's status = %+v, want waiting 1", real)
		}
		if decoy.Status != "waiting" || decoy.Rank != 2 || decoy.Total != 2 {
			t.Errorf("the held token's status = %+v, want waiting 2 of 2, as it was shown", decoy)
		}
		if n := a.waitingIn(t, "s1"); n != 1 {
			t.Errorf("%d wait, want only the real place", n)
		}
		held.Close()
	})
}

func TestASocketOverItsAddressLimitsIsHeldButNeverASolver(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Limits = config.Limits{SocketsPerAddress: 1}
			c.Bots = config.Bots{InfiniteQueue: true, FailureLimit: 100, Hold: time.Minute, MaxHeld: 10}
		})
		first := a.powSocket(t, "s1", solved(t, a.challengeOf(t, "s1")), "")
		place := wantPlace(t, "the address's one socket", first, true)
		second := a.powSocket(t, "s1", "", place.Token)
		if m, err := second.Read(5 * time.Second); err != nil || m.Type != "error" || m.Code != "RATE_LIMITED" {
			t.Errorf("a second socket of a token with a place, over the limit, got %+v, %v; want RATE_LIMITED, never held", m, err)
		}
		held := a.powSocket(t, "s1", "", "")
		wantHeld(t, "a second socket without a solution", held, 1)
		over := a.powSocket(t, "s1", solved(t, a.challengeOf(t, "s1")), "")
		m, err := over.Read(5 * time.Second)
		if err != nil || m.Type != "error" || m.Code != "RATE_LIMITED" {
			t.Errorf("a solver over the limit got %+v, %v; want RATE_LIMITED, never held", m, err)
		}
		if !strings.Contains(a.metrics(t), `waitroom_bots_held_total{reason="rate_limited"} 1`) {
			t.Error("/metrics does not count the held socket as rate_limited")
		}
		held.Close()
	})
}

func TestAHeldSocketIsToldToReconnectOnADrain(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Limits = config.Limits{SocketsPerAddress: 1}
			c.Bots = config.Bots{InfiniteQueue: true, FailureLimit: 100, Hold: time.Minute, MaxHeld: 10}
		})
		first := a.powSocket(t, "s1", solved(t, a.challengeOf(t, "s1")), "")
		wantPlace(t, "the address's one socket", first, true)
		held := a.powSocket(t, "s1", "", "")
		wantHeld(t, "a socket over the limit", held, 1)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := a.hub.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown with a held socket = %v, want nil", err)
		}
		if code := held.CloseCode(t, 5*time.Second); code != hub.CloseServiceRestart {
			t.Errorf("the held socket ended with %d on a drain, want 1012", code)
		}
	})
}
