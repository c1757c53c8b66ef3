// The operator's list of the webhooks: by state, newest first, each with the contract's fields; a state
// that is none of the three is refused.

package server_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/testenv"
)

func TestAdminListsTheWebhooksByState(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		db := env.DB
		var ids []string
		for _, typ := range []string{"order.held", "order.confirmed", "order.expired", "screening.sold_out"} {
			id := testenv.Unique("msg_")
			ids = append(ids, id)
			if _, err := db.Exec(db.Rebind(`INSERT INTO webhook_outbox (msg_id, type, payload) VALUES (?, ?, '{}')`), id, typ); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().UTC()
		for _, m := range []struct{ query, id string }{
			{`UPDATE webhook_outbox SET attempts = 1, delivered_at = ?, last_status = 200 WHERE msg_id = ?`, ids[0]},
			{`UPDATE webhook_outbox SET attempts = 15, failed_at = ?, last_status = 500, last_error = 'HTTP 500: down' WHERE msg_id = ?`, ids[2]},
		} {
			if _, err := db.Exec(db.Rebind(m.query), now, m.id); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"?state=pending", []string{ids[3], ids[1]}},
			{"?state=delivered", []string{ids[0]}},
			{"?state=failed", []string{ids[2]}},
			{"", []string{ids[3], ids[2], ids[1], ids[0]}},
		} {
			var body struct {
				Deliveries []map[string]any `json:"deliveries"`
			}
			decode(t, "GET /api/admin/webhooks"+c.query, a.adminCall(t, http.MethodGet, "/api/admin/webhooks"+c.query, ""), &body)
			var got []string
			for _, d := range body.Deliveries {
				got = append(got, d["msg_id"].(string))
				for _, k := range []string{"id", "msg_id", "type", "created_at", "attempts", "next_attempt_at", "delivered_at", "last_status", "last_error"} {
					if _, ok := d[k]; !ok {
						t.Errorf("GET /api/admin/webhooks%s: a delivery %v has no %q", c.query, d, k)
					}
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("GET /api/admin/webhooks%s = %v, want %v", c.query, got, c.want)
			}
		}
		wantError(t, "GET /api/admin/webhooks?state=lost", a.adminCall(t, http.MethodGet, "/api/admin/webhooks?state=lost", ""),
			http.StatusBadRequest, "BAD_REQUEST")
		if r, err := a.do(http.MethodGet, "/api/admin/webhooks", "", ""); err != nil || r.status != http.StatusUnauthorized {
			t.Errorf("GET /api/admin/webhooks without the key = %v %v, want 401", r.status, err)
		}
	})
}
