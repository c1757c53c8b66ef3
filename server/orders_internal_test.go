// The orders' pace per address, on a clock of the test's own.

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// newOrdersServer is a server over an embedded env with the given limits and checkout, its clock at now.
func newOrdersServer(t *testing.T, limits Limits, checkout Checkout, now *time.Time) *Server {
	t.Helper()
	env := testenv.New(t, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	passes := pass.NewSecretIssuer(fuzzSecret)
	store := booking.NewStore(env.DB)
	book := booking.New(store, q, q, passes, booking.Settings{
		LockWait: 200 * time.Millisecond, LockLease: 10 * time.Second, MaxSeats: 4,
	})
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	h := hub.New(q, passes, q, reg, log)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	s := New(Deps{Queue: q, Store: store, Booking: book, Hub: h, Redis: env.Redis, Gatherer: reg, Log: log,
		Limits: limits, Checkout: checkout})
	s.now = func() time.Time { return *now }
	return s
}

// serveFrom answers method path as the server does for a client at addr.
func serveFrom(s *Server, addr, method, path, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = addr + ":40000"
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// errorCodeOf is the code of an error body.
func errorCodeOf(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %s: %v", rec.Body, err)
	}
	return e.Error.Code
}

// Each of an order's routes is paced per client address (limits.orders_per_second, bursts of
// limits.orders_burst): past the burst, 429 RATE_LIMITED with Retry-After, until the clock has given a
// request back; another address is not slowed. The payment backend's confirm is not paced.
func TestOrderRoutesArePacedPerAddress(t *testing.T) {
	const code = "aaaaaaaaaaaaaaaaaaaaaaaaaa" // no such order: a request let through answers 404
	routes := []struct{ method, path string }{
		{http.MethodGet, "/api/orders/" + code},
		{http.MethodPost, "/api/orders/" + code + "/cancel"},
		{http.MethodPost, "/api/orders/" + code + "/pay"},
		{http.MethodGet, "/checkout/" + code},
		{http.MethodGet, "/t/" + code},
		{http.MethodGet, "/t/" + code + "/qr.png"},
	}
	now := time.Unix(1_000_000, 0)
	const perSecond, burst = 0.5, 3
	s := newOrdersServer(t, Limits{OrdersPerSecond: perSecond, OrdersBurst: burst}, Checkout{Demo: true}, &now)
	for i, r := range routes {
		addr := fmt.Sprintf("198.51.100.%d", i+1) // each route its own address: its own burst
		for n := range burst {
			if rec := serveFrom(s, addr, r.method, r.path, ""); rec.Code == http.StatusTooManyRequests {
				t.Fatalf("%s %s #%d of the burst = 429, want it let through", r.method, r.path, n+1)
			}
		}
		rec := serveFrom(s, addr, r.method, r.path, "")
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "2" {
			t.Errorf("%s %s past the burst = %d, Retry-After %q; want 429, 2 s (one request per 2 s)", r.method, r.path, rec.Code, rec.Header().Get("Retry-After"))
			continue
		}
		if got := errorCodeOf(t, rec); got != "RATE_LIMITED" {
			t.Errorf("%s %s past the burst: code %q, want RATE_LIMITED", r.method, r.path, got)
		}
	}
	first := "198.51.100.1"
	if rec := serveFrom(s, "203.0.113.7", http.MethodGet, routes[0].path, ""); rec.Code != http.StatusNotFound {
		t.Errorf("another address = %d, want 404 (not slowed)", rec.Code)
	}
	now = now.Add(2 * time.Second) // 1 / perSecond
	if rec := serveFrom(s, first, http.MethodGet, routes[0].path, ""); rec.Code != http.StatusNotFound {
		t.Errorf("once a request came back = %d, want 404 (let through)", rec.Code)
	}
	if rec := serveFrom(s, first, http.MethodGet, routes[0].path, ""); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the request after it = %d, want 429 (only one came back)", rec.Code)
	}

	const key = "confirm-key-0123456789"
	backend := newOrdersServer(t, Limits{OrdersPerSecond: perSecond, OrdersBurst: 1}, Checkout{ConfirmKey: key}, &now)
	for i := range 3 * burst {
		if rec := serveFrom(backend, "203.0.113.9", http.MethodPost, "/api/orders/"+code+"/confirm", "Bearer "+key); rec.Code != http.StatusNotFound {
			t.Fatalf("confirm %d from one address = %d, want 404 (not paced)", i+1, rec.Code)
		}
	}
}

// The QR cache never holds more than maxKeptQRs codes, nor one of a URL longer than maxKeptQRURL.
func TestTheQRCacheIsBounded(t *testing.T) {
	q := newQRCache()
	for i := range maxKeptQRs + 10 {
		q.put(fmt.Sprintf("http://h/t/%026d", i), qrImage{png: []byte{1}})
		if n := len(q.kept); n > maxKeptQRs {
			t.Fatalf("after %d puts the cache holds %d, want at most %d", i+1, n, maxKeptQRs)
		}
	}
	long := "http://" + strings.Repeat("h", maxKeptQRURL) + "/t/x"
	q.put(long, qrImage{png: []byte{1}})
	if _, ok := q.get(long); ok {
		t.Errorf("a %d-byte URL's code was kept, want only URLs of at most %d bytes", len(long), maxKeptQRURL)
	}
}
