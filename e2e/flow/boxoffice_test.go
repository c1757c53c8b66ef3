// The box office across two instances: a sale whose seats are all held waits and is told so on every
// instance; a hold cancelled gives its seat back and every instance's line hears it; a refund after sold out
// reopens the sale to new arrivals on either instance.

package flow

import (
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

const boxConfirmKey = "confirm-key-0123456789abcdef"

// twoInstances starts two servers over the real backends that sell screening "pair" (one row of two seats)
// with mode ("instant" or "hold"), a shop's checkout URL (never visited: the test confirms with the key).
func twoInstances(t *testing.T, mode string) (*testenv.Env, *apptest.Server, *apptest.Server) {
	env := testenv.New(t, testenv.Real)
	env.Demo(t, "pair", 1, 2)
	settings := map[string]string{
		"WAITROOM_ADMISSION_INTERVAL":   "200ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "2",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "2",
		"WAITROOM_BOOKING_CHECKOUT":     mode,
		"WAITROOM_BOOKING_HOLD_TTL":     "1m",
		"WAITROOM_ADMIN_KEY":            apptest.AdminKey,
		"WAITROOM_BOOKING_CONFIRM_KEY":  boxConfirmKey,
		"WAITROOM_BOOKING_CHECKOUT_URL": "https://shop.example/pay?order={code}",
		"WAITROOM_DEMO_ENABLED":         "false",
	}
	return env, apptest.Start(t, env, settings), apptest.Start(t, env, settings)
}

// admitted dials the screening on srv and reads until its pass comes.
func admitted(t *testing.T, srv *apptest.Server, screening string) (*testenv.Socket, string) {
	t.Helper()
	s := srv.Dial(t, screening, "")
	m, _ := s.Until(t, "admitted", 10*time.Second)
	return s, m.Pass
}

func TestAllHeldWaitsAndACancelledHoldReopensOnEveryInstance(t *testing.T) {
	_, a, b := twoInstances(t, "hold")
	ua, passA := admitted(t, a, "pair")
	ub, passB := admitted(t, b, "pair")
	code, held := a.Reserve(t, "pair", passA, "A1")
	if code != http.StatusCreated || held["status"] != "held" {
		t.Fatalf("first hold = %d %v", code, held)
	}
	// The admitted socket on the other instance sees the seat held, live.
	if m, _ := ub.Until(t, "seats", 5*time.Second); m.Type != "seats" {
		t.Errorf("the other instance's admitted socket got %+v, want the seat change", m)
	}
	wa, wb := a.Dial(t, "pair", ""), b.Dial(t, "pair", "")
	wa.Until(t, "queued", 5*time.Second)
	wb.Until(t, "queued", 5*time.Second)
	if code, o := b.Reserve(t, "pair", passB, "A2"); code != http.StatusCreated || o["status"] != "held" {
		t.Fatalf("second hold = %d %v", code, o)
	}
	// Every seat is held: the waiting, on both instances, hear all_held and stay; one who comes now is told
	// too.
	wa.Until(t, "all_held", 5*time.Second)
	wb.Until(t, "all_held", 5*time.Second)
	newcomer := b.Dial(t, "pair", "")
	newcomer.Until(t, "all_held", 5*time.Second)
	var state struct{ State string }
	if a.GetJSON(t, "/api/screenings/pair", &state); state.State != "all_held" {
		t.Errorf("state with every seat held = %q, want all_held", state.State)
	}
	// The buyer of A1 gives up: the seat comes back, both instances' lines hear it, and the freed slot
	// admits one of the waiting.
	cancelled := map[string]any{}
	if st := a.Post(t, "/api/orders/"+held["code"].(string)+"/cancel", "", &cancelled); st != http.StatusOK {
		t.Fatalf("buyer cancel = %d %v", st, cancelled)
	}
	// 15 s, not 5: under a loaded CI (every package's tests at once) this read timed out twice in five runs
	// at 5 s; why the reopening took that long there is not yet known.
	wa.Until(t, "reopened", 15*time.Second)
	wb.Until(t, "reopened", 15*time.Second)
	newcomer.Until(t, "reopened", 15*time.Second)
	if a.GetJSON(t, "/api/screenings/pair", &state); state.State != "on_sale" {
		t.Errorf("state after the cancel = %q, want on_sale", state.State)
	}
	ua.Close()
	ub.Close()
}

func TestARefundAfterSoldOutReopensTheSaleOnEveryInstance(t *testing.T) {
	_, a, b := twoInstances(t, "instant")
	_, passA := admitted(t, a, "pair")
	_, passB := admitted(t, b, "pair")
	code, first := a.Reserve(t, "pair", passA, "A1")
	if code != http.StatusCreated {
		t.Fatalf("reserve A1 = %d %v", code, first)
	}
	if code, o := b.Reserve(t, "pair", passB, "A2"); code != http.StatusCreated {
		t.Fatalf("reserve A2 = %d %v", code, o)
	}
	for _, srv := range []*apptest.Server{a, b} {
		late := srv.Dial(t, "pair", "")
		if m := late.Next(t, 5*time.Second); m.Type != "sold_out" || m.Reason != "sold_out" {
			t.Fatalf("a connect after the sell-out got %+v, want sold_out, reason sold_out", m)
		}
	}
	var out map[string]any
	if st := a.Admin(t, http.MethodPost, "/orders/"+first["code"].(string)+"/cancel", nil, &out); st != http.StatusOK {
		t.Fatalf("refund = %d %v", st, out)
	}
	// Both instances take new arrivals again, and one of them buys the seat given back.
	_, passB2 := admitted(t, b, "pair")
	if code, o := b.Reserve(t, "pair", passB2, "A1"); code != http.StatusCreated {
		t.Fatalf("reserve the refunded seat = %d %v", code, o)
	}
	late := a.Dial(t, "pair", "")
	if m := late.Next(t, 5*time.Second); m.Type != "sold_out" {
		t.Errorf("a connect once the seat sold again got %+v, want sold_out", m)
	}
}
