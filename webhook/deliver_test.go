// The deliverer's promises: delivered once and signed, retried under the same webhook-id until a 2xx,
// never sent twice at once by two deliverers on one database, given up and listed as failed.

package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
	"github.com/waitroom/waitroom/webhook"
)

func TestDeliveredOnceWithAValidSignature(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newReceiver(t, nil)
		ids := write(t, env.DB, 1, "order.confirmed")
		d := start(t, env.DB, fast(r.URL))
		eventually(t, 5*time.Second, func() bool { return len(list(t, env.DB, webhook.Delivered)) == 1 },
			func() string { return "the webhook is not marked delivered" })
		if n, err := d.Poll(t.Context()); err != nil || n != 0 { // a second delivery would be claimed by a poll
			t.Errorf("a poll after the delivery claimed %d webhooks (%v), want none", n, err)
		}
		r.check(t)
		if attempts, delivered := r.deliveries(ids[0]); attempts != 1 || delivered != 1 {
			t.Errorf("receiver saw %d attempts, %d deliveries of %s, want 1 and 1", attempts, delivered, ids[0])
		}
		got := list(t, env.DB, webhook.Delivered)[0]
		if got.MsgID != ids[0] || got.Attempts != 1 || got.LastStatus == nil || *got.LastStatus != http.StatusNoContent || got.DeliveredAt == nil {
			t.Errorf("delivered row = %+v, want msg_id %s, 1 attempt, last_status 204, delivered_at set", got, ids[0])
		}
		if n := d.count("delivered"); n != 1 {
			t.Errorf("deliveries_total{outcome=delivered} = %d, want 1", n)
		}
		eventually(t, time.Second, func() bool { return testutil.ToFloat64(d.metrics.Pending) == 0 },
			func() string { return "waitroom_webhook_pending is not 0" })
	})
}

func TestRetriedUnderTheSameIDUntilTheReceiverTakesIt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		var mu sync.Mutex
		var seen []string // the webhook-id of each attempt
		r := newReceiver(t, func(id string, attempt int) int {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, id)
			if attempt <= 2 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		ids := write(t, env.DB, 1, "order.held")
		d := start(t, env.DB, fast(r.URL))
		eventually(t, 5*time.Second, func() bool { _, n := r.deliveries(ids[0]); return n == 1 },
			func() string { return "the third attempt never came" })
		eventually(t, time.Second, func() bool { return len(list(t, env.DB, webhook.Delivered)) == 1 },
			func() string { return "the webhook is not marked delivered" })
		r.check(t)
		mu.Lock()
		if len(seen) != 3 || seen[0] != ids[0] || seen[1] != ids[0] || seen[2] != ids[0] {
			t.Errorf("attempts came with webhook-ids %v, want %s three times", seen, ids[0])
		}
		mu.Unlock()
		got := list(t, env.DB, webhook.Delivered)[0]
		if got.Attempts != 3 || *got.LastStatus != http.StatusOK || got.LastError != nil {
			t.Errorf("delivered row = %+v, want 3 attempts, last_status 200, no last_error", got)
		}
		if f, ok := d.count("failed_attempt"), d.count("delivered"); f != 2 || ok != 1 {
			t.Errorf("deliveries_total failed_attempt = %d, delivered = %d, want 2 and 1", f, ok)
		}
	})
}

func TestGivenUpIsListedAsFailed(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newReceiver(t, func(string, int) int { return http.StatusServiceUnavailable })
		ids := write(t, env.DB, 1, "order.expired")
		s := fast(r.URL)
		s.MaxAttempts = 3
		d := start(t, env.DB, s)
		eventually(t, 5*time.Second, func() bool { return len(list(t, env.DB, webhook.Failed)) == 1 },
			func() string { return "the webhook is not listed as failed" })
		if n, err := d.Poll(t.Context()); err != nil || n != 0 { // no attempt after the last
			t.Errorf("a poll after giving up claimed %d webhooks (%v), want none", n, err)
		}
		if attempts, _ := r.deliveries(ids[0]); attempts != 3 {
			t.Errorf("receiver saw %d attempts, want 3", attempts)
		}
		got := list(t, env.DB, webhook.Failed)[0]
		if got.MsgID != ids[0] || got.Attempts != 3 || got.FailedAt == nil || got.DeliveredAt != nil ||
			got.LastStatus == nil || *got.LastStatus != http.StatusServiceUnavailable ||
			got.LastError == nil || !strings.HasPrefix(*got.LastError, "HTTP 503") {
			t.Errorf("failed row = %+v, want msg_id %s, 3 attempts, failed_at set, last_status 503, last_error HTTP 503…", got, ids[0])
		}
		if p := list(t, env.DB, webhook.Pending); len(p) != 0 {
			t.Errorf("pending = %+v, want none", p)
		}
		if g, f := d.count("gave_up"), d.count("failed_attempt"); g != 1 || f != 2 {
			t.Errorf("deliveries_total gave_up = %d, failed_attempt = %d, want 1 and 2", g, f)
		}
		if !strings.Contains(d.log.String(), "webhook: given up") {
			t.Errorf("log %q does not tell of the webhook given up", d.log.String())
		}
	})
}

func TestAnUnreachableReceiverIsRetriedWithoutAStatus(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newReceiver(t, nil)
		url := r.URL
		r.Close() // nothing listens there now
		write(t, env.DB, 1, "order.cancelled")
		s := fast(url)
		s.FirstRetry, s.MaxRetry = time.Hour, time.Hour
		d := start(t, env.DB, s)
		eventually(t, 5*time.Second, func() bool { return d.count("failed_attempt") == 1 },
			func() string { return "no failed attempt was counted" })
		eventually(t, time.Second, func() bool { p := list(t, env.DB, webhook.Pending); return len(p) == 1 && p[0].LastError != nil },
			func() string { return "the failed attempt is not recorded" })
		got := list(t, env.DB, webhook.Pending)[0]
		if got.LastStatus != nil || got.Attempts != 1 || time.Until(got.NextAttemptAt) < 40*time.Minute {
			t.Errorf("pending row = %+v, want no last_status, 1 attempt, next attempt in about an hour", got)
		}
	})
}

// Two deliverers, each with its own pool as two instances have, share one PostgreSQL outbox: every row
// reaches the receiver once, and never while another attempt of it is under way.
func TestTwoDeliverersDeliverEachRowOnce(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	const rows = 400
	r := newReceiver(t, nil)
	r.delay = 2 * time.Millisecond
	ids := write(t, env.DB, rows, "order.confirmed")
	other, err := booking.Open(context.Background(), env.DatabaseURL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	s := fast(r.URL)
	s.Every = 5 * time.Millisecond
	a, b := start(t, env.DB, s), start(t, other, s)
	eventually(t, 60*time.Second, func() bool { return len(list(t, env.DB, webhook.Delivered)) == rows },
		func() string { return "not every row is marked delivered" })
	r.check(t)
	for _, id := range ids {
		if attempts, delivered := r.deliveries(id); attempts != 1 || delivered != 1 {
			t.Errorf("%s: %d attempts, %d deliveries, want 1 and 1", id, attempts, delivered)
		}
	}
	if n := a.count("delivered") + b.count("delivered"); n != rows {
		t.Errorf("the deliverers counted %d deliveries, want %d", n, rows)
	}
	t.Logf("deliverer A sent %d, B sent %d", a.count("delivered"), b.count("delivered"))
}

func TestListsByStateNewestFirst(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ids := write(t, env.DB, 3, "order.held")
		mark(t, env.DB, ids[0], "delivered_at")
		mark(t, env.DB, ids[1], "failed_at")
		for _, c := range []struct {
			state webhook.State
			want  []string
		}{
			{webhook.Pending, ids[2:]}, {webhook.Delivered, ids[:1]}, {webhook.Failed, ids[1:2]}, {"", []string{ids[2], ids[1], ids[0]}},
		} {
			var got []string
			for _, d := range list(t, env.DB, c.state) {
				got = append(got, d.MsgID)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("List(%q) = %v, want %v", c.state, got, c.want)
			}
		}
		if _, err := webhook.ParseState("lost"); err == nil {
			t.Errorf("ParseState(lost) = nil error, want ErrBadState")
		}
	})
}

// mark sets the time column of the row msgID to now.
func mark(t *testing.T, db *sqlx.DB, msgID, column string) {
	t.Helper()
	if _, err := db.Exec(db.Rebind(`UPDATE webhook_outbox SET `+column+` = ? WHERE msg_id = ?`), time.Now().UTC(), msgID); err != nil {
		t.Fatal(err)
	}
}
