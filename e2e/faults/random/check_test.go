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

	"github.com/waitroom/waitroom/pass"
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
	w := checkWaitlist(t, h)
	// 1 and 4: the seats and the orders, as PostgreSQL has them.
	f := checkOrders(t, env, h.users, h.hooks)
	l := checkLog(t, env, h)
	t.Logf("history: %d users, %s, %d admissions told (%d in %d events heard), %d with an order, %d sold out, %d queued again after a lapse, %d places lost to a Redis restart, %d sockets refused BUSY, peak active %d",
		len(h.users), h.faults.String(), admissions, heardAdmissions, len(heard), withOrder, soldOut, requeued, lost, busy, h.peakActive)
	t.Logf("orders: %s", f)
	t.Logf("waitlist: %s", w)
	t.Logf("admission log: %s", l)
	t.Logf("webhooks: %d deliveries received; run took %v; violations found: %d",
		h.hooks.n.Load(), time.Since(h.began).Round(time.Second), t.violations)
}

// checkWaitlist holds the waitlist's offers to its rules: no offer given twice (a token is offered seats
// once: it leaves the line when offered); every offer a user was told of has its waitlist.offered webhook
// (before the first Redis restart; a restart may lose the news of an offer made just before it, counted);
// and nobody ends waiting on the waitlist unless every seat is sold (endTheWaitlist ends the run's waitlist
// only then, so a user left waiting while seats came back never finishes, and guarantee 2 reports it). The
// offers' order is the admission log's (checkLog: up to the first restart, no place is offered past a lower
// one, as every party here is of one).
func checkWaitlist(t *judge, h *history) string {
	offers, waitlisted, endedWaiting, missing, afterRestart := 0, 0, 0, 0, 0
	var firstRestart time.Time
	h.faults.mu.Lock()
	if len(h.faults.restarts) > 0 {
		firstRestart = h.faults.restarts[0]
	}
	h.faults.mu.Unlock()
	for _, u := range h.users {
		if u.waitlisted > 0 {
			waitlisted++
		}
		if u.soldOut && u.onWaitlist.Load() {
			endedWaiting++
		}
		byToken := map[string]int64{}
		for _, o := range u.offers {
			offers++
			if exp, ok := byToken[o.token]; ok && exp != o.expiresAt.UnixMilli() {
				t.Errorf("waitlist: user %d's token %s was offered seats twice (until %d and %d)", u.n, o.token[:8], exp, o.expiresAt.UnixMilli())
			}
			byToken[o.token] = o.expiresAt.UnixMilli()
			if o.seats != 1 {
				t.Errorf("waitlist: user %d was offered %d seats, want 1 (nobody asked for a party)", u.n, o.seats)
			}
			h.hooks.mu.Lock()
			delivered := h.hooks.seen["msg_waitlist.offered_"+pass.ID("rnd", o.token, o.expiresAt)] > 0
			h.hooks.mu.Unlock()
			switch {
			case delivered:
			case !firstRestart.IsZero() && o.expiresAt.Add(-h.plan.activeTTL).After(firstRestart.Add(-lostPlaceMargin)):
				afterRestart++
			default:
				missing++
				t.Errorf("waitlist: user %d's offer (until %s) has no waitlist.offered webhook", u.n, o.expiresAt.Format(time.TimeOnly))
			}
		}
	}
	return fmt.Sprintf("%d users waited on it, %d offers told (%d webhooks missing, %d near or after a Redis restart not held to it), %d ended waiting when every seat was sold",
		waitlisted, offers, missing, afterRestart, endedWaiting)
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
