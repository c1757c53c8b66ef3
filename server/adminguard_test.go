// The admin API's log and the guard on the keys: each admin request is logged once, by its route's pattern,
// with the server's own request id and the client's address; wrong admin keys, and wrong confirm keys, are
// throttled per address, each key on its own.

package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/testenv"
)

// adminFrom sends GET path with key as the admin key ("" sends no Authorization), from client (an X-Forwarded-For the server trusts,
// its peer being a trusted proxy), and returns the answer.
func (a *testServer) adminFrom(t *testing.T, client, key, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.ts.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("X-Forwarded-For", client)
	res, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// newGuardedApp is the admin API behind a trusted proxy (the test's loopback peer), so a test can play
// several client addresses.
func newGuardedApp(t *testing.T) *testServer {
	return newApp(t, testenv.New(t, testenv.Embedded), func(c *config.Config) {
		c.Admin.Key = adminKey
		c.HTTP.BehindProxy, c.HTTP.TrustedProxies = true, []string{"127.0.0.1"}
	})
}

// Ten wrong keys from one address are answered 401; then it is refused with 429 and Retry-After, even with
// the right key (not compared), while another address is not slowed, and its success frees nobody else.
func TestWrongAdminKeysAreThrottledPerAddress(t *testing.T) {
	a := newGuardedApp(t)
	const guesser, operator = "198.51.100.66", "203.0.113.10"
	for i := range 10 {
		if res := a.adminFrom(t, guesser, "wrong-key-"+strconv.Itoa(i), "/api/admin/screenings"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong key %d = %d, want 401", i+1, res.StatusCode)
		}
	}
	res := a.adminFrom(t, guesser, "wrong-key-again", "/api/admin/screenings")
	retry, _ := strconv.Atoi(res.Header.Get("Retry-After"))
	if res.StatusCode != http.StatusTooManyRequests || retry < 1 || retry > 60 {
		t.Errorf("11th wrong key = %d, Retry-After %q; want 429 with 1..60 s", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := a.adminFrom(t, guesser, adminKey, "/api/admin/screenings"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right key from the throttled address = %d, want 429 (the key is not compared)", res.StatusCode)
	}
	if res := a.adminFrom(t, guesser, "", "/api/admin/screenings"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key from the throttled address = %d, want 401 (no key tried)", res.StatusCode)
	}
	if res := a.adminFrom(t, "198.51.100.67", adminKey, "/api/admin/screenings"); res.StatusCode != http.StatusOK {
		t.Errorf("the right key from another address = %d, want 200", res.StatusCode)
	}
	if res := a.adminFrom(t, operator, "wrong", "/api/admin/screenings"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("one wrong key from a third address = %d, want 401", res.StatusCode)
	}
	if res := a.adminFrom(t, guesser, adminKey, "/api/admin/screenings"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the throttled address after others' successes = %d, want still 429", res.StatusCode)
	}
	metrics := a.metrics(t)
	for _, want := range []string{`waitroom_key_refusals_total{key="admin",reason="wrong_key"} 11`,
		`waitroom_key_refusals_total{key="admin",reason="locked_out"} 3`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// An operator's right keys use up nothing, nor do calls with no key (the control room's probe whether the
// API is on): many of each in a row, then a right key, all answered as without the guard.
func TestRightAdminKeysAndNoKeysAreNeverThrottled(t *testing.T) {
	a := newGuardedApp(t)
	for i := range 30 {
		if res := a.adminFrom(t, "203.0.113.20", adminKey, "/api/admin/screenings"); res.StatusCode != http.StatusOK {
			t.Fatalf("call %d with the right key = %d, want 200", i+1, res.StatusCode)
		}
		if res := a.adminFrom(t, "203.0.113.20", "", "/api/admin/screenings"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("call %d with no key = %d, want 401", i+1, res.StatusCode)
		}
	}
}

// confirmFrom posts the confirm of the order code with key as the confirm key ("" sends no Authorization),
// from client (an X-Forwarded-For the server trusts), and returns the answer.
func (a *testServer) confirmFrom(t *testing.T, client, key, code string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.ts.URL+"/api/orders/"+code+"/confirm", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("X-Forwarded-For", client)
	res, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// newConfirmGuardedApp sells in hold mode with a confirm key and the admin API, behind a trusted proxy (the
// test's loopback peer), so a test can play several client addresses.
func newConfirmGuardedApp(t *testing.T) *testServer {
	return newApp(t, testenv.New(t, testenv.Embedded), func(c *config.Config) {
		holdMode(c)
		c.HTTP.BehindProxy, c.HTTP.TrustedProxies = true, []string{"127.0.0.1"}
	})
}

// The confirm key is guarded as the admin key is: ten wrong keys from one address are answered 401, then
// 429 with Retry-After even with the right key (not compared), while the payment backend's address confirms,
// and the admin key of the guessing address is not locked by its confirm keys (each key its own count). The
// refusals are counted by key and reason.
func TestWrongConfirmKeysAreThrottledPerAddress(t *testing.T) {
	a := newConfirmGuardedApp(t)
	const guesser, backend = "198.51.100.66", "203.0.113.10"
	passes := a.admit(t, "s1", 1)
	var held orderView
	created(t, a.reserve(t, "s1", passes[0], `{"seats":["A1"]}`), &held)
	for i := range 10 {
		if res := a.confirmFrom(t, guesser, "wrong-key-"+strconv.Itoa(i), held.Code); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong confirm key %d = %d, want 401", i+1, res.StatusCode)
		}
	}
	res := a.confirmFrom(t, guesser, "wrong-key-again", held.Code)
	retry, _ := strconv.Atoi(res.Header.Get("Retry-After"))
	if res.StatusCode != http.StatusTooManyRequests || retry < 1 || retry > 60 {
		t.Errorf("11th wrong confirm key = %d, Retry-After %q; want 429 with 1..60 s", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := a.confirmFrom(t, guesser, confirmKey, held.Code); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right confirm key from the throttled address = %d, want 429 (the key is not compared)", res.StatusCode)
	}
	if res := a.confirmFrom(t, guesser, "", held.Code); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no confirm key from the throttled address = %d, want 401 (no key tried)", res.StatusCode)
	}
	if res := a.adminFrom(t, guesser, adminKey, "/api/admin/screenings"); res.StatusCode != http.StatusOK {
		t.Errorf("the admin key from the address throttled at the confirm key = %d, want 200 (each key its own count)", res.StatusCode)
	}
	if res := a.confirmFrom(t, backend, confirmKey, held.Code); res.StatusCode != http.StatusOK {
		t.Errorf("the right confirm key from the payment backend = %d, want 200", res.StatusCode)
	}
	if res := a.confirmFrom(t, guesser, confirmKey, held.Code); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the throttled address after the backend's success = %d, want still 429", res.StatusCode)
	}
	metrics := a.metrics(t)
	for _, want := range []string{`waitroom_key_refusals_total{key="confirm",reason="wrong_key"} 10`,
		`waitroom_key_refusals_total{key="confirm",reason="locked_out"} 3`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `waitroom_key_refusals_total{key="admin"`) {
		t.Errorf("/metrics counts admin refusals; the admin key was only ever right")
	}
}

// The payment backend's right keys use up nothing: many confirms in a row from one address, all answered
// as without the guard.
func TestRightConfirmKeysAreNeverThrottled(t *testing.T) {
	a := newConfirmGuardedApp(t)
	guess := "aaaaaaaaaaaaaaaaaaaaaaaaaa"
	for i := range 30 {
		if res := a.confirmFrom(t, "203.0.113.20", confirmKey, guess); res.StatusCode != http.StatusNotFound {
			t.Fatalf("confirm %d with the right key = %d, want 404 (the key passes; no such order)", i+1, res.StatusCode)
		}
	}
}

// An admin request is logged once, by its route's pattern (not a path of the client's making), with an id
// of the server's own (the client's X-Request-Id apart, cut short), and the client's address.
func TestAdminRequestLoggedOnceByRouteWithTheServersID(t *testing.T) {
	a := newGuardedApp(t)
	long := strings.Repeat("x", 100_000)
	req, _ := http.NewRequest(http.MethodGet, a.ts.URL+"/api/admin/screenings/"+long+"/orders", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	req.Header.Set("X-Forwarded-For", "198.51.100.9")
	req.Header.Set("X-Request-Id", "operator-cleanup\t\xff"+strings.Repeat("y", 500))
	res, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != http.StatusUnauthorized || id == "" || strings.Contains(id, "operator") {
		t.Fatalf("refused request = %d with X-Request-Id %q, want 401 with an id of the server's own", res.StatusCode, id)
	}
	var lines []string
	for line := range strings.Lines(a.log.String()) {
		if strings.Contains(line, "msg=request") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("request log lines = %d:\n%s\nwant 1", len(lines), strings.Join(lines, ""))
	}
	line := lines[0]
	for _, want := range []string{"route=/api/admin/screenings/:id/orders", "status=401", "request_id=" + id,
		"client=198.51.100.9", "client_request_id=operator-cleanup" + strings.Repeat("y", 48)} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, strings.Repeat("y", 49)) {
		t.Errorf("log line %q keeps more than 64 characters of the client's request id", line)
	}
	if len(line) > 1000 {
		t.Errorf("log line of a 100,000-character path is %d bytes, want it bounded", len(line))
	}
}
