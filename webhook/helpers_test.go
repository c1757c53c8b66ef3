// The webhook tests' harness: a real receiver that verifies every signature with the Standard Webhooks
// library and counts what it took, rows written to the outbox as booking writes them, and a running
// deliverer.

package webhook_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/testenv"
	"github.com/waitroom/waitroom/webhook"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// secret signs every test's webhooks: "whsec_" and the base64 of 24 bytes.
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is a webhook endpoint. It answers each attempt with answer(webhook-id, attempt number), counts
// the attempts it answered 2xx (deliveries) by webhook-id, and records every bad signature and every attempt
// that came while another of the same webhook-id was still being answered.
type receiver struct {
	*httptest.Server
	answer func(id string, attempt int) int
	delay  time.Duration // each answer waits this long, to widen any window for a concurrent duplicate

	mu        sync.Mutex
	attempts  map[string]int
	delivered map[string]int
	inFlight  map[string]bool
	overlaps  []string
	bad       []string
	bodies    map[string][]byte
	order     []string // webhook-ids in the order they were delivered
}

func newReceiver(t *testing.T, answer func(id string, attempt int) int) *receiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{answer: answer, attempts: map[string]int{}, delivered: map[string]int{}, inFlight: map[string]bool{}, bodies: map[string][]byte{}}
	if r.answer == nil {
		r.answer = func(string, int) int { return http.StatusNoContent }
	}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get(standardwebhooks.HeaderWebhookID)
		r.mu.Lock()
		if err := wh.Verify(body, req.Header); err != nil {
			r.bad = append(r.bad, fmt.Sprintf("%s: %v", id, err))
		}
		if r.inFlight[id] {
			r.overlaps = append(r.overlaps, id)
		}
		r.inFlight[id] = true
		r.attempts[id]++
		status := r.answer(id, r.attempts[id])
		r.mu.Unlock()
		time.Sleep(r.delay)
		r.mu.Lock()
		delete(r.inFlight, id)
		if status >= 200 && status < 300 {
			r.delivered[id]++
			r.bodies[id] = body
			r.order = append(r.order, id)
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// check fails t for every bad signature and every concurrent duplicate the receiver saw.
func (r *receiver) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bad {
		t.Errorf("bad signature: %s", b)
	}
	if len(r.overlaps) > 0 {
		t.Errorf("webhooks sent again while an attempt was under way: %v", r.overlaps)
	}
}

func (r *receiver) deliveries(id string) (attempts, delivered int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[id], r.delivered[id]
}

// write puts n webhooks of type typ in the outbox as booking does, and returns their message ids.
func write(t *testing.T, db *sqlx.DB, n int, typ string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = testenv.Unique("msg_")
		body := fmt.Sprintf(`{"type":%q,"timestamp":%q,"data":{"n":%d}}`, typ, time.Now().UTC().Format(time.RFC3339Nano), i)
		if _, err := db.Exec(db.Rebind(`INSERT INTO webhook_outbox (msg_id, type, payload) VALUES (?, ?, ?)`), ids[i], typ, body); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// fast are settings that retry within milliseconds.
func fast(url string) webhook.Settings {
	return webhook.Settings{URL: url, Secret: secret, Every: 20 * time.Millisecond, FirstRetry: 30 * time.Millisecond, MaxRetry: time.Second}
}

// deliverer is a Deliverer running until the test ends, with its own metrics.
type deliverer struct {
	*webhook.Deliverer
	metrics *webhook.Metrics
	log     *testenv.SyncBuffer
}

func start(t *testing.T, db *sqlx.DB, s webhook.Settings) *deliverer {
	t.Helper()
	d := &deliverer{metrics: webhook.NewMetrics(prometheus.NewRegistry()), log: &testenv.SyncBuffer{}}
	d.Deliverer = webhook.New(webhook.NewOutbox(db), s, d.metrics, slog.New(slog.NewTextHandler(d.log, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
	return d
}

func (d *deliverer) count(outcome string) int {
	return int(testutil.ToFloat64(d.metrics.Deliveries.WithLabelValues(outcome)))
}

// eventually waits up to within for ok, failing t with what() if it never holds.
func eventually(t *testing.T, within time.Duration, ok func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// list is the outbox's deliveries in state.
func list(t *testing.T, db *sqlx.DB, state webhook.State) []webhook.Delivery {
	t.Helper()
	got, err := webhook.NewOutbox(db).List(context.Background(), state, 500)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
