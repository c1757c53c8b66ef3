package swarm

import (
	"bytes"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// endState is a settled hold sale of three seats: A1 confirmed (after A1's first order lapsed), A2 refunded
// and back on sale, A3 never sold; with every transition in the outbox.
func endState() (orderState, []result) {
	t0 := time.Now()
	confirmed := sql.NullTime{Time: t0.Add(2 * time.Second), Valid: true}
	st := orderState{
		orders: map[string]orderRow{
			"lapsed": {code: "lapsed", status: "expired", held: true, createdAt: t0, endedAt: sql.NullTime{Time: t0.Add(5 * time.Second), Valid: true}},
			"paid":   {code: "paid", status: "confirmed", held: true, createdAt: t0, confirmedAt: confirmed},
			"refunded": {code: "refunded", status: "cancelled", cancelledBy: "admin", held: true, createdAt: t0, confirmedAt: confirmed,
				endedAt: sql.NullTime{Time: t0.Add(3 * time.Second), Valid: true}},
		},
		seats: []string{"A1", "A2", "A3"},
		live:  map[string][]string{"A1": {"paid"}},
		dead:  map[string][]string{"A1": {"lapsed"}, "A2": {"refunded"}},
	}
	for code, types := range map[string][]string{"lapsed": {"held", "expired"}, "paid": {"held", "confirmed"}, "refunded": {"held", "confirmed", "cancelled"}} {
		for _, typ := range types {
			st.outbox = append(st.outbox, outboxRow{id: code + "-" + typ, typ: "order." + typ, code: code})
		}
	}
	results := []result{
		{Outcome: Unpaid, Code: "lapsed"},
		{Outcome: Ticket, Code: "paid", Seats: []string{"A1"}},
		{Outcome: Refunded, Code: "refunded"},
		{Outcome: SoldOut},
	}
	return st, results
}

func TestSettledHoldSalePassesTheOrderCheck(t *testing.T) {
	st, results := endState()
	o, problems := checkOrders(st, results)
	if len(problems) != 0 {
		t.Fatalf("problems = %q, want none", problems)
	}
	if o.Sold != 1 || o.Available != 2 || o.Held != 0 || o.Seats != 3 {
		t.Errorf("sold %d, available %d, held %d of %d; want 1, 2, 0 of 3", o.Sold, o.Available, o.Held, o.Seats)
	}
	if len(o.SoldOutEvents) != 0 {
		t.Errorf("sold-out events = %+v, want none", o.SoldOutEvents)
	}
	if o.HoldToConfirm.Count != 2 || o.HoldToConfirm.P50Ms != 2000 {
		t.Errorf("hold to confirm = %+v, want 2 samples of 2 s", o.HoldToConfirm)
	}
}

func TestOrderCheckFindsEveryBreach(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(*orderState, []result)
		want  string
	}{
		{"a seat in two live orders", func(st *orderState, _ []result) {
			st.live["A1"] = append(st.live["A1"], "lapsed")
		}, "seat A1 is in 2 live orders"},
		{"an order still held", func(st *orderState, _ []result) {
			o := st.orders["lapsed"]
			o.status = "held"
			st.orders["lapsed"] = o
		}, "order lapsed is still held"},
		{"a user's view and the database disagree", func(_ *orderState, rs []result) {
			rs[0].Outcome = Ticket
		}, "order lapsed is expired in the database, but its user saw it end ticket"},
		{"an order nobody made", func(st *orderState, _ []result) {
			st.orders["stray"] = orderRow{code: "stray", status: "expired"}
		}, "order stray is in the database but no user made it"},
		{"a transition without its webhook", func(st *orderState, _ []result) {
			st.outbox = st.outbox[1:]
		}, "no order.held message in the webhook outbox"},
		{"a confirmed order's seat not live", func(st *orderState, _ []result) {
			st.dead["A3"] = []string{"paid"}
		}, "seat A3 of order paid, which is confirmed, is no longer live"},
		{"the line closed as sold out with seats free", func(st *orderState, _ []result) {
			st.outbox = append(st.outbox, outboxRow{id: "so", typ: "screening.sold_out", screening: "x",
				createdAt: st.orders["paid"].confirmedAt.Time.Add(time.Minute)})
		}, "with 2 seats in no order and 0 only held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, results := endState()
			tc.spoil(&st, results)
			_, problems := checkOrders(st, results)
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Errorf("problems = %q, want one containing %q", problems, tc.want)
			}
		})
	}
}

func TestReceiverCountsEachMessageOnceAndRefusesBadSignatures(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rc, err := startReceiver("127.0.0.1:0", secret)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.stop()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + rc.ln.Addr().String() + "/"
	post := func(id string, body []byte, sign bool) int {
		req := httptest.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.RequestURI = ""
		now := time.Now()
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		sig := "v1,AAAA"
		if sign {
			if sig, err = wh.Sign(id, now, body); err != nil {
				t.Fatal(err)
			}
		}
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	body := []byte(`{"type":"order.held","timestamp":"2026-12-01T00:00:00Z","data":{"code":"x"}}`)
	for i, tc := range []struct {
		id   string
		sign bool
		want int
	}{{"msg_1", true, 204}, {"msg_1", true, 204}, {"msg_2", false, 401}, {"msg_3", true, 204}} {
		if got := post(tc.id, body, tc.sign); got != tc.want {
			t.Errorf("delivery %d (%s, signed %v) = %d, want %d", i, tc.id, tc.sign, got, tc.want)
		}
	}
	w := rc.report(Check{WebhookListen: "x", WebhooksExpected: true}, []string{"msg_1", "msg_2", "msg_3"}, 0)
	if w.Received != 2 || w.Deliveries != 4 || w.BadSignature != 1 || w.Missing != 1 || w.ByType["order.held"] != 2 {
		t.Errorf("report = %+v; want 2 received of 4 deliveries, 1 badly signed, 1 missing", w)
	}
	if p := w.problems(); len(p) != 2 {
		t.Errorf("problems = %q, want the missing message and the bad signature", p)
	}
	if p := rc.report(Check{WebhookListen: "x"}, []string{"msg_1", "msg_2", "msg_3"}, 0).problems(); len(p) != 0 {
		t.Errorf("problems without -webhooks-expected = %q, want none", p)
	}
}
