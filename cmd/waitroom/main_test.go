package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testServer is a run() started by a test.
type testServer struct {
	URL string
	out *testenv.SyncBuffer
}

// start calls run() on 127.0.0.1:0 with env's backends and the settings given, waits for /healthz, and stops
// it (checking it drained cleanly) when the test ends.
func start(t *testing.T, env *testenv.Env, settings map[string]string) *testServer {
	t.Helper()
	vars := map[string]string{
		"WAITROOM_HTTP_ADDR":    "127.0.0.1:0",
		"WAITROOM_DATABASE_URL": env.DatabaseURL,
		"WAITROOM_REDIS_PREFIX": env.Prefix,
		"WAITROOM_LOG_LEVEL":    "warn",
	}
	if env.Kind == testenv.Real {
		vars["WAITROOM_REDIS_ADDR"] = env.RedisAddr
		vars["WAITROOM_PASS_SECRET"] = "test-secret-0123456789abcdef0123456789"
	}
	for k, v := range settings {
		vars[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- app.Main(ctx, []string{"waitroom", "-config", ""}, func(k string) string { return vars[k] }, out)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run() after shutdown = %v, want nil", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("run() did not return within 20s of shutdown; output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("run() = %v before serving; output:\n%s", err, out.String())
		default:
		}
		if _, rest, ok := strings.Cut(out.String(), "waitroom: open "); ok {
			url := strings.TrimSuffix(strings.SplitN(rest, "\n", 2)[0], "/")
			if resp, err := http.Get(url + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return &testServer{URL: url, out: out}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server did not become healthy; output:\n%s", out.String())
	return nil
}

// msg is any server message.
type msg struct {
	Type      string `json:"type"`
	Token     string `json:"token"`
	Rank      int64  `json:"rank"`
	Total     int64  `json:"total"`
	Inserted  bool   `json:"inserted"`
	TickAt    int64  `json:"tick_at"`
	Pass      string `json:"pass"`
	ExpiresAt string `json:"expires_at"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	OpensAt   string `json:"opens_at"`
	Paused    bool   `json:"paused"`
	// ETASeconds is absent (nil) while the server does not know the admission rate.
	ETASeconds *int64 `json:"eta_seconds"`
}

type client struct {
	t    *testing.T
	conn *websocket.Conn
}

func (s *testServer) dial(t *testing.T, screening, token string) *client {
	t.Helper()
	u := strings.Replace(s.URL, "http://", "ws://", 1) + "/ws/screenings/" + screening
	if token != "" {
		u += "?token=" + token
	}
	conn, resp, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	resp.Body.Close()
	c := &client{t: t, conn: conn}
	t.Cleanup(func() { conn.Close() })
	return c
}

// next reads the next message, failing the test after timeout.
func (c *client) next(timeout time.Duration) msg {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
	var m msg
	if err := c.conn.ReadJSON(&m); err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

// until reads messages until one of type typ arrives; others are returned in order before it.
func (c *client) until(typ string, timeout time.Duration) (msg, []msg) {
	c.t.Helper()
	var before []msg
	deadline := time.Now().Add(timeout)
	for {
		m := c.next(time.Until(deadline))
		if m.Type == typ {
			return m, before
		}
		before = append(before, m)
	}
}

func (s *testServer) reserve(t *testing.T, screening, pass string, seats ...string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"seats": seats})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/screenings/"+screening+"/reservations", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if pass != "" {
		req.Header.Set("Authorization", "Bearer "+pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (s *testServer) getJSON(t *testing.T, path string, v any) int {
	t.Helper()
	resp, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
	return resp.StatusCode
}

func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestRegisterReconnectAdmitReserve walks the whole path a client of docs/protocol.md takes: register, keep
// the place on reconnect, see the line move, be admitted with a pass, reserve, and be refused a taken seat,
// a forged pass and a spent one.
func TestRegisterReconnectAdmitReserve(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "other", 1, 2)
		srv := start(t, env, map[string]string{
			"WAITROOM_ADMISSION_INTERVAL":   "300ms",
			"WAITROOM_ADMISSION_BATCH_SIZE": "1",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		})

		a := srv.dial(t, "demo", "")
		qa := a.next(5 * time.Second)
		if qa.Type != "queued" || !qa.Inserted || len(qa.Token) != 32 {
			t.Fatalf("first message = %+v, want queued, inserted, with a token", qa)
		}
		// A refresh: the same token keeps its place and is not inserted again.
		a.conn.Close()
		a = srv.dial(t, "demo", qa.Token)
		again := a.next(5 * time.Second)
		if again.Type == "queued" && (again.Inserted || again.Token != qa.Token) {
			t.Fatalf("reconnect = %+v, want the same token, not inserted", again)
		}

		b := srv.dial(t, "demo", "")
		qb := b.next(5 * time.Second)
		if qb.Type != "queued" || qb.Token == qa.Token {
			t.Fatalf("second client = %+v, want queued with a new token", qb)
		}

		// max_active 1: A is admitted first (it came first), B waits until A's slot is freed.
		var admA msg
		if again.Type == "admitted" {
			admA = again
		} else {
			admA, _ = a.until("admitted", 10*time.Second)
		}
		if admA.Pass == "" || admA.Token != qa.Token {
			t.Fatalf("admitted = %+v, want a pass for A's token", admA)
		}
		if _, err := time.Parse(time.RFC3339, admA.ExpiresAt); err != nil {
			t.Fatalf("expires_at %q: %v", admA.ExpiresAt, err)
		}

		// A reconnect while admitted hands the pass out again.
		a2 := srv.dial(t, "demo", qa.Token)
		if m := a2.next(5 * time.Second); m.Type != "admitted" || m.Pass == "" {
			t.Fatalf("reconnect while admitted = %+v, want admitted with a pass", m)
		}

		var st map[string]any
		srv.getJSON(t, "/api/screenings/demo/queue/"+qb.Token, &st)
		if st["status"] != "waiting" || st["rank"] != float64(1) {
			t.Fatalf("B's status = %v, want waiting at rank 1", st)
		}

		if code, body := srv.reserve(t, "demo", admA.Pass+"x", "A1"); code != http.StatusUnauthorized || errorCode(body) != "INVALID_PASS" {
			t.Fatalf("forged pass: %d %v, want 401 INVALID_PASS", code, body)
		}
		if code, body := srv.reserve(t, "other", admA.Pass, "A1"); code != http.StatusUnauthorized || errorCode(body) != "INVALID_PASS" {
			t.Fatalf("pass of another screening: %d %v, want 401 INVALID_PASS", code, body)
		}
		if code, body := srv.reserve(t, "nope", admA.Pass, "A1"); code != http.StatusNotFound || errorCode(body) != "UNKNOWN_SCREENING" {
			t.Fatalf("unknown screening: %d %v, want 404 UNKNOWN_SCREENING", code, body)
		}
		if code, body := srv.reserve(t, "demo", admA.Pass, "Z99"); code != http.StatusBadRequest || errorCode(body) != "BAD_REQUEST" {
			t.Fatalf("unknown seat: %d %v, want 400 BAD_REQUEST", code, body)
		}
		code, body := srv.reserve(t, "demo", admA.Pass, "A2", "A1")
		if code != http.StatusCreated {
			t.Fatalf("reserve: %d %v, want 201", code, body)
		}
		if seats := fmt.Sprint(body["seats"]); seats != "[A1 A2]" {
			t.Errorf("reserved seats = %s, want [A1 A2] (sorted)", seats)
		}
		if code, body := srv.reserve(t, "demo", admA.Pass, "B1"); code != http.StatusGone || errorCode(body) != "PASS_SPENT" {
			t.Fatalf("second use of a pass: %d %v, want 410 PASS_SPENT", code, body)
		}

		// A's reservation freed its slot, and the slot is refilled at once: B is admitted, and A1 is taken.
		admB, _ := b.until("admitted", 10*time.Second)
		if code, body := srv.reserve(t, "demo", admB.Pass, "A1"); code != http.StatusConflict || errorCode(body) != "SEAT_TAKEN" {
			t.Fatalf("taken seat: %d %v, want 409 SEAT_TAKEN", code, body)
		}
		if code, body := srv.reserve(t, "demo", admB.Pass, "C3"); code != http.StatusCreated {
			t.Fatalf("B reserves a free seat: %d %v, want 201", code, body)
		}

		var seats []map[string]any
		srv.getJSON(t, "/api/screenings/demo/seats", &seats)
		sold := 0
		for _, s := range seats {
			if s["status"] == "sold" {
				sold++
			}
		}
		if len(seats) != 100 || sold != 3 {
			t.Errorf("seat map: %d seats, %d sold; want 100 seats, 3 sold", len(seats), sold)
		}
	})
}

// TestSoldOutTellsTheLine fills a screening and checks that the waiting line is told at once and that a new
// registration is answered sold_out.
func TestSoldOutTellsTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "tiny", 1, 1)
		srv := start(t, env, map[string]string{
			"WAITROOM_ADMISSION_INTERVAL":   "300ms",
			"WAITROOM_ADMISSION_BATCH_SIZE": "1",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
			"WAITROOM_DEMO_ENABLED":         "false",
		})
		a := srv.dial(t, "tiny", "")
		a.next(5 * time.Second)
		b := srv.dial(t, "tiny", "")
		b.next(5 * time.Second)
		adm, _ := a.until("admitted", 10*time.Second)
		if code, body := srv.reserve(t, "tiny", adm.Pass, "A1"); code != http.StatusCreated {
			t.Fatalf("reserve the last seat: %d %v", code, body)
		}
		if m, _ := b.until("sold_out", 10*time.Second); m.Type != "sold_out" {
			t.Fatalf("waiting client got %+v, want sold_out", m)
		}
		c := srv.dial(t, "tiny", "")
		if m := c.next(5 * time.Second); m.Type != "sold_out" {
			t.Fatalf("new registration got %+v, want sold_out", m)
		}
		var list []map[string]any
		srv.getJSON(t, "/api/screenings", &list)
		if len(list) != 1 || list[0]["state"] != "sold_out" {
			t.Errorf("screenings = %v, want tiny sold_out", list)
		}
	})
}

// TestUnknownScreeningAndBadToken: a socket to a screening that does not exist, or with a token the server
// never handed out, gets an error message and a close.
func TestUnknownScreeningAndBadToken(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := start(t, env, nil)
		if m := srv.dial(t, "nope", "").next(5 * time.Second); m.Type != "error" || m.Code != "UNKNOWN_SCREENING" {
			t.Errorf("unknown screening: %+v, want error UNKNOWN_SCREENING", m)
		}
		if m := srv.dial(t, "demo", "not-a-token").next(5 * time.Second); m.Type != "error" || m.Code != "BAD_TOKEN" {
			t.Errorf("bad token: %+v, want error BAD_TOKEN", m)
		}
		var body map[string]any
		if code := srv.getJSON(t, "/api/screenings/nope", &body); code != http.StatusNotFound || errorCode(body) != "UNKNOWN_SCREENING" {
			t.Errorf("GET unknown screening: %d %v", code, body)
		}
	})
}

// metricValue reads the counter name{screening} from a server's /metrics (0 when absent: never counted there).
func metricValue(t *testing.T, client *http.Client, baseURL, name, screening string) int {
	t.Helper()
	n, _ := metricSeries(t, client, baseURL, fmt.Sprintf("%s{screening=%q}", name, screening))
	return n
}

// metricSeries reads one series (its name and labels as /metrics spells them) from a server's /metrics, and
// whether it is there.
func metricSeries(t *testing.T, client *http.Client, baseURL, series string) (int, bool) {
	t.Helper()
	resp, err := client.Get(baseURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	prefix := series + " "
	for line := range strings.Lines(buf.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			return int(n), true
		}
	}
	return 0, false
}
