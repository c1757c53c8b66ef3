package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/swarm"
)

const testAdminKey = "naive-test-admin-key"

// start serves a naive server whose demo ticks every interval admitting batch, until the test ends.
func start(t *testing.T, interval time.Duration, batch int) string {
	t.Helper()
	s := newServer(testAdminKey, 250*time.Millisecond, interval, batch)
	ts := httptest.NewServer(s.routes())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		ts.Close()
	})
	return ts.URL
}

// create makes a screening of rows × perRow seats, on sale now, through the admin route.
func create(t *testing.T, base, id string, rows, perRow int, admission string) {
	t.Helper()
	now := time.Now().UTC()
	body := `{"id":"` + id + `","name":"Test","starts_at":"` + now.Add(time.Hour).Format(time.RFC3339) +
		`","sale_opens_at":"` + now.Format(time.RFC3339) + `","rows":` + strconv.Itoa(rows) + `,"seats_per_row":` + strconv.Itoa(perRow) +
		`,"admission":` + admission + `}`
	req, _ := http.NewRequest(http.MethodPost, base+"/api/admin/screenings", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/admin/screenings = %d %s, want 201", resp.StatusCode, b)
	}
}

func TestSwarmFlowSellsEverySeatOnceThenSoldOut(t *testing.T) {
	base := start(t, time.Second, 10)
	for _, best := range []bool{false, true} {
		id := "named"
		if best {
			id = "best"
		}
		t.Run(id, func(t *testing.T) {
			create(t, base, id, 2, 5, `{"interval":"100ms","batch_size":4,"max_active":6,"active_ttl":"30s"}`)
			rep, err := swarm.Run(context.Background(), swarm.Config{
				URL: base, Screening: id, Users: 60, Concurrency: 30, Retries: 20, Best: best, Timeout: time.Minute,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			o := rep.Outcomes
			if o.Ticket != 10 || o.Ticket+o.SoldOut != 60 || o.Error != 0 {
				t.Errorf("outcomes %+v (errors %v), want 10 tickets and 50 sold_out", o, rep.Errors)
			}
			if !rep.Verification.OK {
				t.Errorf("verification: %v", rep.Verification.Problems)
			}
		})
	}
}

func TestSwarmLineOnDemo(t *testing.T) {
	base := start(t, 300*time.Millisecond, 2)
	rep, err := swarm.Run(context.Background(), swarm.Config{
		URL: base, Screening: "demo", Mode: swarm.Line, Duration: 1500 * time.Millisecond, Users: 20,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := rep.Outcomes; o.Held+o.Admitted != 20 || o.Admitted == 0 || o.Error != 0 {
		t.Errorf("outcomes %+v (errors %v), want 20 held or admitted, some admitted", o, rep.Errors)
	}
	if rep.Push.Ticks == 0 || rep.Push.MissedTicks != 0 {
		t.Errorf("push: %d ticks, %d missed; want some ticks, none missed", rep.Push.Ticks, rep.Push.MissedTicks)
	}
}

// TestOneReservationPerPass: a retry with the same Idempotency-Key and seats gets the first 201 again;
// another key gets 410 PASS_SPENT, the same key with other seats 422.
func TestOneReservationPerPass(t *testing.T) {
	base := start(t, time.Second, 10)
	create(t, base, "once", 1, 4, `{"interval":"100ms","batch_size":1,"max_active":1}`)
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws/screenings/once?auth=message", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	var pass string
	for pass == "" {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		var m struct{ Type, Pass string }
		if err := conn.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "admitted" {
			pass = m.Pass
		}
	}
	post := func(key, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/screenings/once/reservations", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+pass)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(bytes.TrimSpace(b))
	}
	status, first := post("k1", `{"seats":["A2"]}`)
	if status != http.StatusCreated || !strings.Contains(first, `"seats":["A2"]`) || !strings.Contains(first, `"status":"confirmed"`) {
		t.Fatalf("first POST = %d %s, want 201 with A2 confirmed", status, first)
	}
	if status, again := post("k1", `{"seats":["A2"]}`); status != http.StatusCreated || again != first {
		t.Errorf("retry with the key = %d %s, want 201 %s", status, again, first)
	}
	if status, body := post("k2", `{"seats":["A3"]}`); status != http.StatusGone || !strings.Contains(body, "PASS_SPENT") {
		t.Errorf("another key = %d %s, want 410 PASS_SPENT", status, body)
	}
	if status, body := post("k1", `{"seats":["A3"]}`); status != http.StatusUnprocessableEntity || !strings.Contains(body, "IDEMPOTENCY_KEY_REUSED") {
		t.Errorf("the key with other seats = %d %s, want 422 IDEMPOTENCY_KEY_REUSED", status, body)
	}
}
