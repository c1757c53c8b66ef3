// Tests of hold checkout against the scripted fake server: a user pays its hold, pays too late, or waits on
// its socket for a held seat to come back, buys it and is refunded.

package swarm

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// boxOffice is the fake's order routes: confirm answers confirmStatus (409 with HOLD_EXPIRED when it is
// 409), the admin cancel 200; both count their calls and check their keys.
type boxOffice struct {
	t             *testing.T
	confirmStatus int
	mu            sync.Mutex
	confirms      int
	refunds       int
}

func (b *boxOffice) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/orders/{code}/confirm", func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer confirm-key" || r.PathValue("code") != "c1" {
			b.t.Errorf("confirm %s with %q, want c1 with the confirm key", r.PathValue("code"), got)
		}
		b.mu.Lock()
		b.confirms++
		b.mu.Unlock()
		w.WriteHeader(b.confirmStatus)
		if b.confirmStatus == http.StatusConflict {
			_, _ = w.Write([]byte(`{"error":{"code":"HOLD_EXPIRED","message":"the hold expired"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"code":"c1","status":"confirmed"}`))
	})
	mux.HandleFunc("POST /api/admin/orders/{code}/cancel", func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer admin-key" {
			b.t.Errorf("refund with %q, want the admin key", got)
		}
		b.mu.Lock()
		b.refunds++
		b.mu.Unlock()
		_, _ = w.Write([]byte(`{"code":"c1","status":"cancelled","cancelled_by":"admin"}`))
	})
}

func holdConfig(url string, cancelShare float64) Config {
	return Config{URL: url, Screening: "x", Users: 1, Retries: 1, Timeout: 10 * time.Second,
		Checkout: Checkout{Mode: HoldCheckout, PayShare: 1, CancelShare: cancelShare, ConfirmKey: "confirm-key",
			AdminKey: "admin-key", PayDelayMin: 10 * time.Millisecond, PayDelayMax: 20 * time.Millisecond}}
}

func admitOne(t *testing.T) func(int, string, *websocket.Conn) {
	return func(n int, token string, conn *websocket.Conn) {
		send(t, conn, map[string]any{"type": "admitted", "token": "t1", "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
	}
}

func held(n int, seats []string) (int, any) {
	return http.StatusCreated, map[string]any{"id": 1, "code": "c1", "status": "held", "screening": "x", "seats": seats}
}

func TestHoldCheckoutUserPaysAfterItsDelay(t *testing.T) {
	b := &boxOffice{t: t, confirmStatus: http.StatusOK}
	url := newFake(t, &fake{onSocket: admitOne(t), onReserve: held, routes: b.routes})
	rep, err := Run(context.Background(), holdConfig(url, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	box := rep.BoxOffice
	if rep.Outcomes != (Outcomes{Ticket: 1}) || box == nil || box.Holds != 1 || box.Confirmed != 1 || b.confirms != 1 || b.refunds != 0 {
		t.Fatalf("outcomes %+v, box office %+v, confirms %d, refunds %d; want one ticket held then confirmed once (errors %v)",
			rep.Outcomes, box, b.confirms, b.refunds, rep.Errors)
	}
	if l := box.HoldToConfirm; l.Count != 1 || l.P50Ms < 10 {
		t.Errorf("hold to confirm = %+v, want one sample of at least the 10 ms pay delay", l)
	}
	if !rep.Verification.OK {
		t.Errorf("verification: %q", rep.Verification.Problems)
	}
}

func TestHoldCheckoutUserWhoPaysTooLateIsCountedLapsed(t *testing.T) {
	b := &boxOffice{t: t, confirmStatus: http.StatusConflict}
	url := newFake(t, &fake{onSocket: admitOne(t), onReserve: held, routes: b.routes})
	rep, err := Run(context.Background(), holdConfig(url, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Lapsed: 1}) || rep.BoxOffice.Lapsed != 1 || rep.BoxOffice.Confirmed != 0 {
		t.Errorf("outcomes %+v, box office %+v; want one lapsed hold (errors %v)", rep.Outcomes, rep.BoxOffice, rep.Errors)
	}
}

// TestHoldCheckoutUserWaitsOnItsSocketForAHeldSeat: every seat is held when the user is admitted; a seats
// message puts A2 back on sale, the user buys it, pays, and the operator refunds it.
func TestHoldCheckoutUserWaitsOnItsSocketForAHeldSeat(t *testing.T) {
	var mu sync.Mutex
	admitted, back := false, false
	// mapped is closed once the user's first seat map after its admission is drawn, every seat held (the
	// swarm's own read before the run comes earlier): the seats messages come after it, as they would to a
	// user already waiting on its socket.
	mapped := make(chan struct{})
	drawn := sync.OnceFunc(func() { close(mapped) })
	b := &boxOffice{t: t, confirmStatus: http.StatusOK}
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			mu.Lock()
			admitted = true
			mu.Unlock()
			send(t, conn, map[string]any{"type": "admitted", "token": "t1", "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
			select {
			case <-mapped:
			case <-time.After(10 * time.Second):
				t.Error("the user did not read the seat map within 10s of its admission")
				return
			}
			send(t, conn, map[string]any{"type": "seats", "seats": []map[string]string{{"id": "A1", "status": "sold"}}})
			mu.Lock()
			back = true
			mu.Unlock()
			send(t, conn, map[string]any{"type": "seats", "seats": []map[string]string{{"id": "A2", "status": "available"}}})
		},
		seatStatus: func(id string) string {
			mu.Lock()
			defer mu.Unlock()
			if back && id == "A2" {
				return "available"
			}
			if admitted && id == "A3" { // the map's last seat: the whole map is drawn held
				drawn()
			}
			return "held"
		},
		onReserve: func(n int, seats []string) (int, any) {
			if len(seats) != 1 || seats[0] != "A2" {
				t.Errorf("reserved %q, want A2, the seat back on sale", seats)
			}
			return held(n, seats)
		},
		routes: b.routes,
	}
	url := newFake(t, f)
	cfg := holdConfig(url, 1)
	cfg.Check.Settle = 100 * time.Millisecond // A1 and A3 stay held here: nothing sweeps them
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Refunded: 1}) || rep.BoxOffice.HeldWaits != 1 || b.refunds != 1 {
		t.Errorf("outcomes %+v, held waits %d, refunds %d; want one refund after one wait (errors %v)",
			rep.Outcomes, rep.BoxOffice.HeldWaits, b.refunds, rep.Errors)
	}
}

// TestBestUserWaitsForAHeldSeatAfterNotEnoughSeats: a user asking by count is told NOT_ENOUGH_SEATS with
// seats only held, though its map still showed one free (being reserved by another): it waits on its
// socket for a seat to come back, spending no try, and asks again only then.
func TestBestUserWaitsForAHeldSeatAfterNotEnoughSeats(t *testing.T) {
	var mu sync.Mutex
	refused, back := make(chan struct{}), false
	b := &boxOffice{t: t, confirmStatus: http.StatusOK}
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			send(t, conn, map[string]any{"type": "admitted", "token": "t1", "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
			select {
			case <-refused:
			case <-time.After(10 * time.Second):
				t.Error("the user did not ask for a seat within 10s of its admission")
				return
			}
			mu.Lock()
			back = true
			mu.Unlock()
			send(t, conn, map[string]any{"type": "seats", "seats": []map[string]string{{"id": "A2", "status": "available"}}})
		},
		seatStatus: func(id string) string {
			if id == "A1" {
				return "available" // the map's last free seat, which another buyer is reserving
			}
			return "held"
		},
		onReserve: func(n int, seats []string) (int, any) {
			mu.Lock()
			defer mu.Unlock()
			if n == 0 {
				close(refused)
				return http.StatusConflict, map[string]any{"error": map[string]any{
					"code": "NOT_ENOUGH_SEATS", "message": "not that many seats are free together", "held": 2}}
			}
			if !back {
				t.Errorf("asked again (call %d) before any seat came back", n)
			}
			return held(n, []string{"A2"})
		},
		routes: b.routes,
	}
	url := newFake(t, f)
	cfg := holdConfig(url, 1)
	cfg.Best, cfg.Retries = true, 0 // the one try is spent on the seat that came back
	cfg.Check.Settle = 100 * time.Millisecond
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Refunded: 1}) || rep.BoxOffice.HeldWaits != 1 || f.posts != 2 {
		t.Errorf("outcomes %+v, held waits %d, posts %d; want one refund after one wait and two posts (errors %v)",
			rep.Outcomes, rep.BoxOffice.HeldWaits, f.posts, rep.Errors)
	}
}
