//go:build faults

// The random run's history held to the guarantees of docs/reliability.md.

package random

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// history is what a run saw, to be checked.
type history struct {
	plan       plan
	users      []*user
	peakActive int64
	events     *eventLog
	faults     *faultCount
	hooks      *webhookSink
	began      time.Time
	logKey     string // the admission log's key (kid:seed), for the users' receipts
}

// lostPlaceMargin is how long before a place was acknowledged a Redis restart may still lose it.
const lostPlaceMargin = 10 * time.Second

// check checks the history against the guarantees: the line's (1 to 3) here, the box office's (4) in
// checkOrders.
func check(tt *testing.T, env *testenv.Env, h *history) {
	tt.Helper()
	t := &judge{T: tt}
	p := h.plan
	// 2: nobody lost: every user ends holding an order whose every call was answered, or told sold out.
	withOrder, soldOut, requeued, admissions, lost, busy := 0, 0, 0, 0, 0, 0
	for _, u := range h.users {
		switch {
		case u.err != "":
			t.Errorf("guarantee 2: user %d (token %s) lost: %s, admissions %v, last refusal %s", u.n, u.token, u.err, u.admissions, u.lastRefusal)
		case u.order != nil:
			withOrder++
			for _, s := range u.order.steps {
				if s.status == 0 {
					t.Errorf("guarantee 2: user %d: its %s of order %s got no answer by the deadline", u.n, s.op, u.order.code)
				}
			}
		case u.soldOut:
			soldOut++
		default:
			t.Errorf("guarantee 2: user %d ended with neither an order nor sold out", u.n)
		}
		if u.requeued {
			requeued++
		}
		busy += u.busy
		for _, l := range u.lost {
			lost++
			// A restart just before the place was acknowledged counts too: the line is rebuilt some
			// seconds after it (the instances notice, then rebuildHold), and a place taken meanwhile on
			// the empty Redis can be lost then.
			if !h.faults.restartBetween(l.placedAt.Add(-lostPlaceMargin), l.at) {
				t.Errorf("guarantee 3: user %d lost its place (placed %v, told a new one %v) with no Redis restart to explain it",
					u.n, l.placedAt.Format(time.TimeOnly), l.at.Format(time.TimeOnly))
			}
		}
		admissions += len(u.admissions)
	}
	// 3: at most batch_size per admission (each event is one tick or refill), max_active at a time, queue
	// order.
	h.events.mu.Lock()
	heard := slices.Clone(h.events.evs)
	h.events.mu.Unlock()
	heardAdmissions := 0
	for _, ev := range heard {
		heardAdmissions += len(ev.Admitted)
		if len(ev.Admitted) > p.batchSize {
			t.Errorf("guarantee 3: event %d admitted %d, want at most batch_size %d", ev.Epoch, len(ev.Admitted), p.batchSize)
		}
	}
	if h.peakActive > int64(p.maxActive) {
		t.Errorf("guarantee 3: %d admitted at once in Redis, want at most %d", h.peakActive, p.maxActive)
	}
	// A user acknowledged before another dialled is admitted no later, unless its own first admission
	// lapsed (it queued again from the end).
	order := slices.Clone(h.users)
	slices.SortFunc(order, func(a, b *user) int { return a.ackedAt.Compare(b.ackedAt) })
	for i, a := range order {
		if len(a.admissions) == 0 {
			continue
		}
		for _, b := range order[i+1:] {
			if len(b.admissions) == 0 || !a.ackedAt.Before(b.dialedAt) {
				continue
			}
			if b.admissions[0] < a.admissions[0] {
				t.Errorf("guarantee 3: user %d (placed first) admitted until %d, after user %d (placed later) until %d; heard: %s; %s",
					a.n, a.admissions[0], b.n, b.admissions[0], heardOf(heard, a.token), heardOf(heard, b.token))
			}
		}
	}
	// 1 and 4: the seats and the orders, as PostgreSQL has them.
	f := checkOrders(t, env, h.users, h.hooks)
	l := checkLog(t, env, h)
	t.Logf("history: %d users, %s, %d admissions told (%d in %d events heard), %d with an order, %d sold out, %d queued again after a lapse, %d places lost to a Redis restart, %d sockets refused BUSY, peak active %d",
		len(h.users), h.faults.String(), admissions, heardAdmissions, len(heard), withOrder, soldOut, requeued, lost, busy, h.peakActive)
	t.Logf("orders: %s", f)
	t.Logf("admission log: %s", l)
	t.Logf("webhooks: %d deliveries received; run took %v; violations found: %d",
		h.hooks.n.Load(), time.Since(h.began).Round(time.Second), t.violations)
}

// judge is the test, counting the violations it reports (for the report line).
type judge struct {
	*testing.T
	violations int
}

func (j *judge) Errorf(format string, args ...any) {
	j.Helper()
	j.violations++
	j.T.Errorf(format, args...)
}

// envSeed is WAITROOM_FAULT_SEED, to replay a schedule (0: none given).
func envSeed() uint64 {
	s, _ := strconv.ParseUint(os.Getenv("WAITROOM_FAULT_SEED"), 10, 64)
	return s
}

// heardOf describes the events heard that admitted token, for a failure's message.
func heardOf(heard []queue.Event, token string) string {
	var out []string
	for _, ev := range heard {
		if i := slices.Index(ev.Admitted, token); i >= 0 {
			out = append(out, fmt.Sprintf("epoch %d tick_at %d (#%d of %v)", ev.Epoch, ev.TickAtMs, i, len(ev.Admitted)))
		}
	}
	return token[:min(8, len(token))] + " by " + strings.Join(out, ", ")
}
