package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// faultMsg is a server message and when the test received it.
type faultMsg struct {
	testenv.Message
	At time.Time
}

// faultSocket records every message of one socket from a goroutine of its own, so a test can look at what
// came, and whether the socket was closed, while faults come and go.
type faultSocket struct {
	name string
	srv  *apptest.Server
	conn *websocket.Conn
	done chan struct{} // closed when the socket ends; err says how

	mu   sync.Mutex
	msgs []faultMsg
	err  error
}

// faultWatch opens a socket to screening (with token, or none) and records it until the test ends.
func faultWatch(t *testing.T, srv *apptest.Server, name, screening, token string) *faultSocket {
	t.Helper()
	conn := srv.Dial(t, screening, token).Conn
	s := &faultSocket{name: name, srv: srv, conn: conn, done: make(chan struct{})}
	go s.read()
	t.Cleanup(func() {
		conn.Close()
		<-s.done
	})
	return s
}

func (s *faultSocket) read() {
	defer close(s.done)
	for {
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		m := faultMsg{At: time.Now()}
		if err := json.Unmarshal(data, &m.Message); err != nil {
			m.Type = "undecodable: " + string(data)
		}
		s.mu.Lock()
		s.msgs = append(s.msgs, m)
		s.mu.Unlock()
	}
}

// messages is what came so far.
func (s *faultSocket) messages() []faultMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// ended is how the socket ended: nil while it is open.
func (s *faultSocket) ended() error {
	select {
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err
	default:
		return nil
	}
}

// ofType returns the messages of type typ (every one when typ is "").
func ofType(msgs []faultMsg, typ string) []faultMsg {
	var out []faultMsg
	for _, m := range msgs {
		if typ == "" || m.Type == typ {
			out = append(out, m)
		}
	}
	return out
}

// await waits until a message of type typ came after since (the zero time: any) and returns the first such,
// failing the test after timeout or when the socket ends first.
func (s *faultSocket) await(t *testing.T, typ string, since time.Time, timeout time.Duration) faultMsg {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, m := range s.messages() {
			if m.Type == typ && !m.At.Before(since) {
				return m
			}
		}
		select {
		case <-s.done:
			t.Fatalf("%s: socket ended (%v) before a %q message; got %s\nserver log:\n%s", s.name, s.ended(), typ, s, s.srv.Out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q message within %v; got %s\nserver log:\n%s", s.name, typ, timeout, s, s.srv.Out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// String lists the messages so far, for failure messages.
func (s *faultSocket) String() string {
	var b strings.Builder
	for _, m := range s.messages() {
		fmt.Fprintf(&b, "%s", m.Type)
		switch m.Type {
		case "queued", "position":
			fmt.Fprintf(&b, "(%d/%d)", m.Rank, m.Total)
		case "error":
			fmt.Fprintf(&b, "(%s)", m.Code)
		}
		fmt.Fprintf(&b, "@%s ", m.At.Format("15:04:05.000"))
	}
	return "[" + strings.TrimSpace(b.String()) + "]"
}

// faultLog is the server's log lines that mention what (the error behind a status, for a failure message).
func faultLog(srv *apptest.Server, what string) string {
	var b strings.Builder
	for line := range strings.Lines(srv.Out.String()) {
		if strings.Contains(line, what) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// faultAdmission is when the server admitted a user: its expiry less the active_ttl it was started with.
func faultAdmission(t *testing.T, m faultMsg, ttl time.Duration) time.Time {
	t.Helper()
	exp, err := time.Parse(time.RFC3339, m.ExpiresAt)
	if err != nil {
		t.Fatalf("admitted %+v: expires_at: %v", m, err)
	}
	return exp.Add(-ttl)
}

// faultLine registers n users on demo, one after the other (registration order is their index), and
// checks each was put at the end of the line.
func faultLine(t *testing.T, srv *apptest.Server, n int) []*faultSocket {
	t.Helper()
	users := make([]*faultSocket, n)
	for i := range users {
		users[i] = faultWatch(t, srv, fmt.Sprintf("user %d", i), "demo", "")
		first := users[i].await(t, "queued", time.Time{}, 5*time.Second)
		if !first.Inserted {
			t.Fatalf("user %d's first message = %+v, want queued, inserted", i, first.Message)
		}
	}
	return users
}

// faultAdmittedCount is how many of users have received an admission.
func faultAdmittedCount(users []*faultSocket) int {
	n := 0
	for _, u := range users {
		if len(ofType(u.messages(), "admitted")) > 0 {
			n++
		}
	}
	return n
}

// faultWaitAdmitted waits until at least n of users were admitted.
func faultWaitAdmitted(t *testing.T, users []*faultSocket, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for faultAdmittedCount(users) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d users admitted within %v, want %d", faultAdmittedCount(users), len(users), timeout, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// faultAdmittedOnceInOrder checks every user received exactly one admission, that admissions followed
// registration order (one per tick: each expiry later than the previous user's), and that no socket
// was closed.
func faultAdmittedOnceInOrder(t *testing.T, users []*faultSocket, ttl time.Duration) []time.Time {
	t.Helper()
	at := make([]time.Time, len(users))
	for i, u := range users {
		adm := ofType(u.messages(), "admitted")
		if len(adm) != 1 {
			t.Errorf("user %d received %d admitted messages, want exactly 1: %s", i, len(adm), u)
			if len(adm) == 0 {
				continue
			}
		}
		at[i] = faultAdmission(t, adm[0], ttl)
		if i > 0 && !at[i-1].IsZero() && !at[i].After(at[i-1]) {
			t.Errorf("user %d admitted at %s, not after user %d (%s): admission out of registration order",
				i, at[i].Format("15:04:05.000"), i-1, at[i-1].Format("15:04:05.000"))
		}
		if err := u.ended(); err != nil {
			t.Errorf("user %d's socket ended: %v", i, err)
		}
	}
	return at
}

// faultInterval is the admission interval of the Redis fault tests.
const faultInterval = 300 * time.Millisecond

// faultRedisServer starts a redis-server of the test's own, a proxy in front of it, and the server on the
// proxy.
func faultRedisServer(t *testing.T, ttl time.Duration) (*apptest.Server, *testenv.Proxy) {
	t.Helper()
	rs := testenv.StartRedis(t)
	env := testenv.Standalone(t, rs.Addr)
	px := testenv.NewProxy(t, rs.Addr)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_REDIS_ADDR":           px.Addr(),
		"WAITROOM_ADMISSION_INTERVAL":   faultInterval.String(),
		"WAITROOM_ADMISSION_BATCH_SIZE": "1",
		"WAITROOM_ADMISSION_ACTIVE_TTL": ttl.String(),
	})
	return srv, px
}

// A reset of every Redis connection mid-sale (the hub's subscription, the scheduler's, the pool's) loses
// nothing: Redis kept the line, and every user is admitted exactly once, in the order they came, on the
// sockets they opened before the reset.
func TestFaultRedisResetKeepsEveryPlace(t *testing.T) {
	const ttl = time.Minute
	srv, px := faultRedisServer(t, ttl)
	const n = 10
	users := faultLine(t, srv, n)

	faultWaitAdmitted(t, users, 2, 10*time.Second)
	px.Reset()
	firstReset := time.Now()
	faultWaitAdmitted(t, users, 5, 15*time.Second)
	px.Reset()
	secondReset := time.Now()
	faultWaitAdmitted(t, users, n, 20*time.Second)
	time.Sleep(3 * faultInterval) // three more ticks: room for a duplicate admission to show

	at := faultAdmittedOnceInOrder(t, users, ttl)
	var st map[string]any
	if code := srv.GetJSON(t, "/api/screenings/demo", &st); code != http.StatusOK || st["waiting"] != float64(0) || st["active"] != float64(n) {
		t.Errorf("GET /api/screenings/demo = %d %v, want waiting 0, active %d", code, st, n)
	}
	notes := 0
	for _, u := range users {
		notes += len(ofType(u.messages(), "unavailable"))
	}
	for i := range at {
		t.Logf("user %d admitted at %s", i, at[i].Format("15:04:05.000"))
	}
	t.Logf("resets at %s and %s; %d sockets were told unavailable (a reset the hub's check does not notice tells nobody)",
		firstReset.Format("15:04:05.000"), secondReset.Format("15:04:05.000"), notes)
}

// Redis unreachable for about 3 s (every connection reset, new ones refused) fails closed and recovers:
// sockets stay open and are told unavailable then available; nobody is admitted meanwhile; new sockets get
// UNAVAILABLE and close 1013, a reservation 503, /readyz 503; afterwards admission goes on in queue order,
// and a pass from before the cut still reserves.
func TestFaultRedisUnreachableFailsClosedAndResumes(t *testing.T) {
	const ttl = time.Minute
	srv, px := faultRedisServer(t, ttl)
	const n = 8
	users := faultLine(t, srv, n)
	faultWaitAdmitted(t, users, 2, 10*time.Second)
	pass := ofType(users[0].messages(), "admitted")[0].Pass

	px.Cut()
	cutAt := time.Now()
	for i, u := range users {
		u.await(t, "unavailable", cutAt, 10*time.Second)
		if i == 0 {
			t.Logf("first socket told unavailable %v after the cut", time.Since(cutAt).Round(time.Millisecond))
		}
	}
	told := time.Since(cutAt)

	newcomer := faultWatch(t, srv, "newcomer", "demo", "")
	select {
	case <-newcomer.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("a socket opened during the cut is still open after 10s: %s", newcomer)
	}
	var ce *websocket.CloseError
	if got := newcomer.messages(); len(got) != 1 || got[0].Type != "error" || got[0].Code != "UNAVAILABLE" {
		t.Errorf("a socket opened during the cut got %+v, want one error UNAVAILABLE", got)
	}
	if err := newcomer.ended(); !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
		t.Errorf("a socket opened during the cut ended with %v, want close 1013", err)
	}
	if code, body := srv.Reserve(t, "demo", pass, "A1"); code != http.StatusServiceUnavailable || apptest.ErrorCode(body) != "UNAVAILABLE" {
		t.Errorf("reservation during the cut = %d %v, want 503 UNAVAILABLE; server log:\n%s", code, body, faultLog(srv, "reservations"))
	}
	var ready map[string]string
	if code := srv.GetJSON(t, "/readyz", &ready); code != http.StatusServiceUnavailable || ready["redis"] == "ok" {
		t.Errorf("/readyz during the cut = %d %v, want 503 with the redis check failing", code, ready)
	}
	if ready["database"] != "ok" {
		// The checks share one deadline: a Redis check that uses it up fails the database's too.
		t.Logf("/readyz during the cut blamed the database as well: %v", ready)
	}
	time.Sleep(time.Until(cutAt.Add(3 * time.Second)))

	admittedBefore := faultAdmittedCount(users)
	px.Restore()
	restoredAt := time.Now()
	for i, u := range users {
		u.await(t, "available", restoredAt, 15*time.Second)
		if i == 0 {
			t.Logf("first socket told available %v after the restore", time.Since(restoredAt).Round(time.Millisecond))
		}
	}
	faultWaitAdmitted(t, users, n, 20*time.Second)
	time.Sleep(3 * faultInterval)

	at := faultAdmittedOnceInOrder(t, users, ttl)
	var firstAfter time.Time
	for i, u := range users {
		msgs := u.messages()
		// Told once each way, in that order.
		if un, av := ofType(msgs, "unavailable"), ofType(msgs, "available"); len(un) != 1 || len(av) != 1 || av[0].At.Before(un[0].At) {
			t.Errorf("user %d: %d unavailable and %d available, want one of each in that order: %s", i, len(un), len(av), u)
		}
		adm := ofType(msgs, "admitted")
		// An admission told during the cut must have been made before it (in flight at the cut). A tick due
		// during the cut may run once Redis is back (its Redis client retries), keeping its due time: that
		// is no admission during the cut, as long as it was told after the restore.
		if len(adm) > 0 && at[i].After(cutAt) && at[i].Before(restoredAt) {
			if adm[0].At.Before(restoredAt) {
				t.Errorf("user %d admitted at %s and told at %s, during the cut (%s to %s)", i, at[i].Format("15:04:05.000"),
					adm[0].At.Format("15:04:05.000"), cutAt.Format("15:04:05.000"), restoredAt.Format("15:04:05.000"))
			} else {
				t.Logf("user %d: a tick due at %s, during the cut, admitted it after the restore (told at %s)", i,
					at[i].Format("15:04:05.000"), adm[0].At.Format("15:04:05.000"))
			}
		}
		if len(adm) == 0 || adm[0].At.Before(restoredAt) {
			continue
		}
		if firstAfter.IsZero() || adm[0].At.Before(firstAfter) {
			firstAfter = adm[0].At
		}
		// Still waiting two intervals after the line ran again: the subscription was restored and the line
		// moved meanwhile, so a fresh position came before its own admission. (A user admitted sooner may
		// get its admission first: a tick due during the cut and the next one can run back to back.)
		fresh := slices.ContainsFunc(ofType(msgs, "position"), func(m faultMsg) bool {
			return !m.At.Before(restoredAt) && m.At.Before(adm[0].At)
		})
		if av := ofType(msgs, "available"); len(av) > 0 && adm[0].At.Sub(av[0].At) > 2*faultInterval && !fresh {
			t.Errorf("user %d, waiting at the restore: no position between the restore and its admission: %s", i, u)
		}
	}
	if code, body := srv.Reserve(t, "demo", pass, "A1"); code != http.StatusCreated {
		t.Errorf("reservation after the restore with a pass from before the cut = %d %v, want 201", code, body)
	}
	t.Logf("cut %s–%s; every socket told unavailable within %v; %d admitted before the cut; first admission %v after the restore",
		cutAt.Format("15:04:05.000"), restoredAt.Format("15:04:05.000"), told.Round(time.Millisecond), admittedBefore,
		firstAfter.Sub(restoredAt).Round(time.Millisecond))
}
