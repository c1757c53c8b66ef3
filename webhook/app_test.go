// The whole server's webhooks: an order held and then paid reaches a receiver as order.held and
// order.confirmed, each signed, under webhook-ids of their own.

package webhook_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestAnOrderHeldThenPaidReachesTheReceiverSigned(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newReceiver(t, nil)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_WEBHOOKS_URL":    r.URL + "/hooks",
			"WAITROOM_WEBHOOKS_SECRET": secret,
			"WAITROOM_ADMIN_KEY":       apptest.AdminKey,
			// The demo checkout pays the hold below.
			"WAITROOM_BOOKING_DEMO_CHECKOUT": "true",
		})
		if code := srv.Admin(t, http.MethodPatch, "/screenings/demo/admission", map[string]any{"checkout": "hold"}, nil); code != http.StatusOK {
			t.Fatalf("PATCH checkout hold = %d, want 200", code)
		}
		sock := srv.Dial(t, "demo", "")
		adm, _ := sock.Until(t, "admitted", 10*time.Second)
		code, order := srv.Reserve(t, "demo", adm.Pass, "A1")
		if code != http.StatusCreated || order["status"] != "held" {
			t.Fatalf("reservation = %d %v, want 201 held", code, order)
		}
		orderCode, _ := order["code"].(string)
		held := r.await(t, "order.held")
		resp, err := http.Post(srv.URL+"/api/orders/"+orderCode+"/pay", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("pay = %d, want 200", resp.StatusCode)
		}
		confirmed := r.await(t, "order.confirmed")
		r.check(t)
		for _, e := range []event{held, confirmed} {
			if e.Data["code"] != orderCode || e.Data["status"] != e.Type[len("order."):] {
				t.Errorf("%s carries order %v (%v), want %s", e.Type, e.Data["code"], e.Data["status"], orderCode)
			}
		}
		if held.id == confirmed.id {
			t.Errorf("order.held and order.confirmed share webhook-id %s, want one each", held.id)
		}
		eventually(t, 5*time.Second, func() bool {
			n, _ := apptest.MetricSeries(t, http.DefaultClient, srv.OpsURL, `waitroom_webhook_deliveries_total{outcome="delivered"}`)
			return n == 2
		}, func() string { return "/metrics does not count the two deliveries" })
	})
}

// event is a delivered webhook's body and id.
type event struct {
	id   string
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// await waits for the first delivered webhook of type typ and returns it.
func (r *receiver) await(t *testing.T, typ string) event {
	t.Helper()
	var found event
	eventually(t, 10*time.Second, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, id := range r.order {
			var e event
			if err := json.Unmarshal(r.bodies[id], &e); err == nil && e.Type == typ {
				e.id = id
				found = e
				return true
			}
		}
		return false
	}, func() string { return "no " + typ + " webhook arrived" })
	return found
}
