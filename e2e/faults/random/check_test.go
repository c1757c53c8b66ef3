//go:build faults

// The random run's history held to the guarantees of docs/reliability.md.

package random

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// check checks the history against the guarantees.
func check(t *testing.T, env *testenv.Env, users []*user, peakActive int64, events *eventLog) {
	t.Helper()
	ctx := context.Background()
	// 1: no seat sold twice, and the database agrees with the users.
	var twice []string
	if err := env.DB.SelectContext(ctx, &twice, `SELECT seat_id FROM reservation_seats WHERE screening_id = 'rnd' GROUP BY seat_id HAVING COUNT(*) > 1`); err != nil {
		t.Fatal(err)
	}
	if len(twice) > 0 {
		t.Errorf("guarantee 1: seats sold twice: %v", twice)
	}
	var sold int
	if err := env.DB.GetContext(ctx, &sold, `SELECT COUNT(*) FROM reservation_seats WHERE screening_id = 'rnd'`); err != nil {
		t.Fatal(err)
	}
	tickets, soldOut, requeued, admissions := 0, 0, 0, 0
	for _, u := range users {
		switch {
		case u.err != "":
			t.Errorf("guarantee 2: user %d (token %s) lost: %s, admissions %v", u.n, u.token, u.err, u.admissions)
		case u.ticket != "":
			tickets++
		case u.soldOut:
			soldOut++
		default:
			t.Errorf("guarantee 2: user %d ended with neither a ticket nor sold out", u.n)
		}
		if u.requeued {
			requeued++
		}
		admissions += len(u.admissions)
	}
	if tickets != sold || sold != seatCount {
		t.Errorf("guarantee 1/2: %d tickets told to users, %d seats sold in SQL, want both %d", tickets, sold, seatCount)
	}
	// 3: at most batch_size per admission (each event is one tick or refill), max_active at a time, queue
	// order.
	events.mu.Lock()
	heard := slices.Clone(events.evs)
	events.mu.Unlock()
	heardAdmissions := 0
	for _, ev := range heard {
		heardAdmissions += len(ev.Admitted)
		if len(ev.Admitted) > batchSize {
			t.Errorf("guarantee 3: event %d admitted %d, want at most batch_size %d", ev.Epoch, len(ev.Admitted), batchSize)
		}
	}
	if peakActive > maxActive {
		t.Errorf("guarantee 3: %d admitted at once in Redis, want at most %d", peakActive, maxActive)
	}
	// A user acknowledged before another dialled is admitted no later, unless its own first admission
	// lapsed (it queued again from the end).
	order := slices.Clone(users)
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
	t.Logf("history: %d users, %d admissions told (%d in %d events heard), %d tickets, %d sold out, %d queued again after a lapse, peak active %d, seats sold %d, violations found: %d",
		len(users), admissions, heardAdmissions, len(heard), tickets, soldOut, requeued, peakActive, sold, violations(t))
}

// violations is 0 when the test has not failed (for the report line).
func violations(t *testing.T) int {
	if t.Failed() {
		return 1
	}
	return 0
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
