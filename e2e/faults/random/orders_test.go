//go:build faults

// The box office's history, read from PostgreSQL once the run settled, held to its guarantees and to what
// the users were told.

package random

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// dbOrder is an order as PostgreSQL has it, with its seats.
type dbOrder struct {
	ID            int64      `db:"id"`
	Code          string     `db:"code"`
	Holder        string     `db:"holder"`
	Status        string     `db:"status"`
	HoldExpiresAt *time.Time `db:"hold_expires_at"`
	ConfirmedAt   *time.Time `db:"confirmed_at"`
	EndedAt       *time.Time `db:"ended_at"`
	CancelledBy   *string    `db:"cancelled_by"`
	seats         []string
	liveSeats     int
}

func (o *dbOrder) live() bool { return o.Status == "held" || o.Status == "confirmed" }

func (o *dbOrder) by() string {
	if o.CancelledBy == nil {
		return ""
	}
	return *o.CancelledBy
}

// checkOrders holds the orders PostgreSQL has to the box office's guarantees, and to what users were told,
// and returns the figures for the report line. 1: no seat in two live orders, now or ever while confirmed;
// 4: every hold ended (confirmed, cancelled or expired), no confirmed order expired, every transition has
// its webhook in the outbox, delivered, and every answer a user had agrees with the database.
func checkOrders(t *judge, env *testenv.Env, users []*user, sink *webhookSink) string {
	t.Helper()
	ctx := context.Background()
	var twice []string
	if err := env.DB.SelectContext(ctx, &twice, `SELECT seat_id FROM reservation_seats WHERE screening_id = 'rnd' AND live
		GROUP BY seat_id HAVING COUNT(*) > 1`); err != nil {
		t.Fatal(err)
	}
	if len(twice) > 0 {
		t.Errorf("guarantee 1: seats in two live orders: %v", twice)
	}
	var orders []*dbOrder
	if err := env.DB.SelectContext(ctx, &orders, `SELECT id, code, holder, status, hold_expires_at, confirmed_at, ended_at, cancelled_by
		FROM reservations WHERE screening_id = 'rnd' ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	byID, byCode := map[int64]*dbOrder{}, map[string]*dbOrder{}
	for _, o := range orders {
		byID[o.ID], byCode[o.Code] = o, o
		if o.HoldExpiresAt == nil {
			t.Errorf("guarantee 4: order %s (%s) was never held", o.Code, o.Status)
			o.HoldExpiresAt = &time.Time{}
		}
		if !o.live() && o.EndedAt == nil {
			t.Errorf("guarantee 4: order %s is %s with no ended_at", o.Code, o.Status)
			o.EndedAt = o.HoldExpiresAt
		}
	}
	var seatRows []struct {
		ID   int64  `db:"reservation_id"`
		Seat string `db:"seat_id"`
		Live bool   `db:"live"`
	}
	if err := env.DB.SelectContext(ctx, &seatRows, `SELECT reservation_id, seat_id, live FROM reservation_seats WHERE screening_id = 'rnd'`); err != nil {
		t.Fatal(err)
	}
	for _, r := range seatRows {
		o := byID[r.ID]
		o.seats = append(o.seats, r.Seat)
		if r.Live {
			o.liveSeats++
		}
	}

	// Every order's own history.
	status := map[string]int{}
	var lags []time.Duration
	for _, o := range orders {
		status[o.Status]++
		slices.Sort(o.seats)
		switch {
		case o.Status == "held":
			t.Errorf("guarantee 4: order %s still held %v after the run settled (hold until %v)", o.Code, time.Since(*o.HoldExpiresAt).Round(time.Millisecond), o.HoldExpiresAt)
		case o.ConfirmedAt != nil && o.Status == "expired":
			t.Errorf("guarantee 4: order %s confirmed at %v and then expired", o.Code, o.ConfirmedAt)
		case o.ConfirmedAt != nil && !o.ConfirmedAt.Before(*o.HoldExpiresAt):
			t.Errorf("guarantee 4: order %s confirmed at %v, after its hold lapsed at %v", o.Code, o.ConfirmedAt, o.HoldExpiresAt)
		case o.Status == "expired" && (o.EndedAt == nil || o.EndedAt.Before(*o.HoldExpiresAt)):
			t.Errorf("guarantee 4: order %s expired at %v, before its hold lapsed at %v", o.Code, o.EndedAt, o.HoldExpiresAt)
		case o.Status == "cancelled" && o.by() == "buyer" && o.ConfirmedAt != nil:
			t.Errorf("guarantee 4: order %s confirmed and then cancelled by its buyer", o.Code)
		case o.Status == "cancelled" && o.by() != "buyer" && o.by() != "admin":
			t.Errorf("guarantee 4: order %s cancelled by %q", o.Code, o.by())
		}
		if o.Status == "expired" && o.EndedAt != nil {
			lags = append(lags, o.EndedAt.Sub(*o.HoldExpiresAt))
		}
		if want := len(o.seats); (o.live() && o.liveSeats != want) || (!o.live() && o.liveSeats != 0) {
			t.Errorf("guarantee 1: order %s is %s with %d of its %d seats live", o.Code, o.Status, o.liveSeats, want)
		}
	}

	// Over time: per seat, the orders that had it, in the order they were made. No two were ever confirmed
	// at once (the database's confirmed_at to ended_at), and each was made after the one before ended.
	bySeat := map[string][]*dbOrder{}
	for _, o := range orders {
		for _, s := range o.seats {
			bySeat[s] = append(bySeat[s], o)
		}
	}
	for seat, os := range bySeat {
		for i := 1; i < len(os); i++ {
			a, b := os[i-1], os[i]
			if a.live() {
				t.Errorf("guarantee 1: seat %s in order %s (%s, still live) and in the later order %s (%s)", seat, a.Code, a.Status, b.Code, b.Status)
				continue
			}
			if a.ConfirmedAt != nil && b.ConfirmedAt != nil && b.ConfirmedAt.Before(*a.EndedAt) {
				t.Errorf("guarantee 1: seat %s confirmed in order %s from %v to %v and in order %s from %v",
					seat, a.Code, a.ConfirmedAt, a.EndedAt, b.Code, b.ConfirmedAt)
			}
		}
	}

	// What the users were told agrees with the database.
	told, kept := checkTold(t, users, byCode, bySeat)
	var confirmedNow []string
	for _, o := range orders {
		if o.Status == "confirmed" {
			confirmedNow = append(confirmedNow, o.Code)
		}
	}
	slices.Sort(confirmedNow)
	slices.Sort(kept)
	if !slices.Equal(confirmedNow, kept) {
		t.Errorf("guarantee 4: orders confirmed in the database %v, want those users were told confirmed and not refunded %v", confirmedNow, kept)
	}
	unknown := 0
	for _, o := range orders {
		if !told[o.Code] {
			unknown++
			if o.Status != "expired" {
				t.Errorf("guarantee 4: order %s, which no user was told of, ended %s, want expired", o.Code, o.Status)
			}
		}
	}

	checkSeatHints(t, env, orders)
	outbox := checkOutbox(t, env, orders, sink)
	seatsSold := 0
	for _, o := range orders {
		if o.Status == "confirmed" {
			seatsSold += len(o.seats)
		}
	}
	return fmt.Sprintf("%d orders (%d confirmed, %d cancelled by the buyer, %d refunded by the operator, %d expired, %d held), %d no user was told of; seats sold at the end %d; expiry after the lapse %s; outbox %s",
		len(orders), status["confirmed"], count(orders, "cancelled", "buyer"), count(orders, "cancelled", "admin"), status["expired"], status["held"],
		unknown, seatsSold, spread(lags), outbox)
}

// count is how many orders ended in status, cancelled by by.
func count(orders []*dbOrder, status, by string) int {
	n := 0
	for _, o := range orders {
		if o.Status == status && o.by() == by {
			n++
		}
	}
	return n
}

// spread describes durations: median, 99th percentile, largest.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))].Round(time.Millisecond) }
	return fmt.Sprintf("median %v, p99 %v, max %v", at(0.5), at(0.99), ds[len(ds)-1].Round(time.Millisecond))
}

// checkTold checks every answer a user had against the order in the database: a confirm answered 200 is
// confirmed there, a 409 HOLD_EXPIRED is expired, a cancel or refund answered 200 is cancelled by the buyer
// or the operator; and, per seat, an order was told held only after the one before it was ended (its end
// asked for, or its hold lapsed). It returns the codes users were told of and those they keep (confirmed,
// not refunded).
func checkTold(t *judge, users []*user, byCode map[string]*dbOrder, bySeat map[string][]*dbOrder) (told map[string]bool, kept []string) {
	t.Helper()
	told = map[string]bool{}
	userOf := map[string]*user{}
	answers := map[string]int{}
	for _, u := range users {
		o := u.order
		if o == nil {
			continue
		}
		told[o.code], userOf[o.code] = true, u
		d := byCode[o.code]
		if d == nil {
			t.Errorf("guarantee 4: user %d was told of order %s, which the database does not have", u.n, o.code)
			continue
		}
		if d.Holder != o.holder || !slices.Equal(d.seats, sorted(o.seats)) {
			t.Errorf("guarantee 4: user %d's order %s: holder %s seats %v in the database, want %s %v", u.n, o.code, d.Holder, d.seats, o.holder, o.seats)
		}
		confirmed := false
		for _, s := range o.steps {
			answers[fmt.Sprintf("%s %d %s", s.op, s.status, s.code)]++
			switch {
			case s.status == 0:
				// reported as lost
			case s.op == "confirm" && s.status == http.StatusOK:
				confirmed = true
				if d.ConfirmedAt == nil || s.got != "confirmed" {
					t.Errorf("guarantee 4: user %d's confirm of %s answered 200 (%s) by instance %d, sent %v, answered %v after %d uncertain attempts; the database has it %s, confirmed at %v, hold until %v, ended %v",
						u.n, o.code, s.got, s.server, s.sentAt.Format(time.StampMicro), s.at.Format(time.StampMicro), s.uncertain, d.Status, d.ConfirmedAt, d.HoldExpiresAt, d.EndedAt)
				}
			case (s.op == "confirm" || s.op == "cancel") && s.code == "HOLD_EXPIRED":
				if d.Status != "expired" {
					t.Errorf("guarantee 4: user %d's %s of %s answered HOLD_EXPIRED, and the database has it %s", u.n, s.op, o.code, d.Status)
				}
			case s.op == "cancel" && (s.status == http.StatusOK || s.code == "ORDER_CANCELLED" && s.uncertain > 0):
				if d.Status != "cancelled" || d.by() != "buyer" {
					t.Errorf("guarantee 4: user %d's cancel of %s answered %d, and the database has it %s by %q", u.n, o.code, s.status, d.Status, d.by())
				}
			case s.op == "refund" && (s.status == http.StatusOK || s.code == "ORDER_CANCELLED" && s.uncertain > 0):
				confirmed = false
				if d.Status != "cancelled" || d.by() != "admin" || d.ConfirmedAt == nil {
					t.Errorf("guarantee 4: the refund of user %d's %s answered %d, and the database has it %s by %q, confirmed at %v", u.n, o.code, s.status, d.Status, d.by(), d.ConfirmedAt)
				}
			default:
				t.Errorf("guarantee 4: user %d's %s of %s answered %d %s (after %d uncertain attempts); the database has it %s",
					u.n, s.op, o.code, s.status, s.code, s.uncertain, d.Status)
			}
		}
		if confirmed {
			kept = append(kept, o.code)
		}
		if u.intent == intentLapse && d.Status != "expired" {
			t.Errorf("guarantee 4: user %d walked away from %s, and the database has it %s, want expired", u.n, o.code, d.Status)
		}
	}
	// Per seat, as the users saw it: the next order of a seat was told held after the end of the one
	// before was asked for (its cancel or refund sent) or its hold lapsed.
	for seat, os := range bySeat {
		for i := 1; i < len(os); i++ {
			a, b := os[i-1], os[i]
			ub := userOf[b.Code]
			if ub == nil || a.live() {
				continue // b told to nobody; a still live is reported above
			}
			end := *a.HoldExpiresAt
			if ua := userOf[a.Code]; ua != nil && a.Status == "cancelled" {
				end = ua.order.endAsked(end)
			}
			if ub.order.heldAt.Before(end) {
				t.Errorf("guarantee 1: seat %s: user %d told held in order %s at %v, before order %s (%s) was ended at %v",
					seat, ub.n, b.Code, ub.order.heldAt, a.Code, a.Status, end)
			}
		}
	}
	keys := make([]string, 0, len(answers))
	for k := range answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s: %d", k, answers[k]))
	}
	t.Logf("answers told: %v", out)
	return told, kept
}

// endAsked is when the user first asked for its order's cancel or refund, or otherwise.
func (o *order) endAsked(otherwise time.Time) time.Time {
	for _, s := range o.steps {
		if s.op == "cancel" || s.op == "refund" {
			return s.sentAt
		}
	}
	return otherwise
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// soldSentinel marks Redis's sold set as loaded from SQL (booking/seatmap.go); it is no seat.
const soldSentinel = "-"

// checkSeatHints checks that Redis's sold and held sets, which the lock script and best available read
// before SQL, agree with PostgreSQL once the run settled: a seat SQL has available but Redis has taken is
// refused to every buyer (SOLD_OUT, NOT_ENOUGH_SEATS) until Redis loses the set. Sets that a Redis restart
// emptied are loaded again at the next seat map, and are not checked.
func checkSeatHints(t *judge, env *testenv.Env, orders []*dbOrder) {
	t.Helper()
	ctx := context.Background()
	soldKey, heldKey := queue.Key(env.Prefix, "rnd", "sold"), queue.Key(env.Prefix, "rnd", "held")
	sold, err := env.Redis.SMembers(ctx, soldKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	held, err := env.Redis.SMembers(ctx, heldKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, o := range orders {
		if o.live() {
			for _, s := range o.seats {
				live[s] = true
			}
		}
	}
	for _, s := range held {
		if !live[s] {
			t.Errorf("guarantee 4: seat %s is in Redis's held set, and no live order has it in SQL", s)
		}
	}
	if len(sold) == 0 {
		return // not loaded since the last restart
	}
	loaded := slices.Contains(sold, soldSentinel)
	for _, s := range sold {
		if !live[s] && s != soldSentinel {
			t.Errorf("guarantee 4: seat %s is in Redis's sold set (loaded from SQL since the last restart: %v), and available in SQL: no buyer can have it", s, loaded)
		}
	}
}

// checkOutbox checks that every transition of every order has its row in webhook_outbox: order.held for
// each, order.confirmed for each confirmed at some time, order.cancelled and order.expired for each that
// ended so; once each; and that every row was delivered and the receiver has it. It returns the figures.
func checkOutbox(t *judge, env *testenv.Env, orders []*dbOrder, sink *webhookSink) string {
	t.Helper()
	var rows []struct {
		MsgID     string     `db:"msg_id"`
		Type      string     `db:"type"`
		Code      *string    `db:"code"`
		Delivered *time.Time `db:"delivered_at"`
		Failed    *time.Time `db:"failed_at"`
		Attempts  int        `db:"attempts"`
	}
	if err := env.DB.SelectContext(context.Background(), &rows, `SELECT msg_id, type, payload::json->'data'->>'code' AS code,
		delivered_at, failed_at, attempts FROM webhook_outbox`); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]int{}
	types := map[string]int{}
	delivered, received, again := 0, 0, 0
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, r := range rows {
		types[r.Type]++
		// Every webhook delivered, and the receiver has it (at least once).
		switch n := sink.seen[r.MsgID]; {
		case r.Delivered == nil || r.Failed != nil:
			t.Errorf("guarantee 4: webhook %s (%s) not delivered: delivered at %v, failed at %v, %d attempts, received %d times", r.MsgID, r.Type, r.Delivered, r.Failed, r.Attempts, n)
		case n == 0:
			t.Errorf("guarantee 4: webhook %s (%s) recorded delivered, and the receiver never had it", r.MsgID, r.Type)
		default:
			delivered++
			received += n
			if n > 1 {
				again++
			}
		}
		if r.Code == nil {
			continue // a screening's event
		}
		if got[*r.Code] == nil {
			got[*r.Code] = map[string]int{}
		}
		got[*r.Code][r.Type]++
	}
	known := map[string]bool{}
	for _, o := range orders {
		known[o.Code] = true
		want := map[string]int{"order.held": 1}
		if o.ConfirmedAt != nil {
			want["order.confirmed"] = 1
		}
		if o.Status == "cancelled" || o.Status == "expired" {
			want["order."+o.Status] = 1
		}
		for _, typ := range []string{"order.held", "order.confirmed", "order.cancelled", "order.expired"} {
			if got[o.Code][typ] != want[typ] {
				t.Errorf("guarantee 4: order %s (%s, confirmed at %v): %d %s rows in the outbox, want %d", o.Code, o.Status, o.ConfirmedAt, got[o.Code][typ], typ, want[typ])
			}
		}
	}
	for code := range got {
		if !known[code] {
			t.Errorf("guarantee 4: outbox rows %v for order %s, which the database does not have", got[code], code)
		}
	}
	return fmt.Sprintf("%d rows (%d held, %d confirmed, %d cancelled, %d expired, %d sold_out, %d reopened), %d delivered (%d receipts, %d received more than once)",
		len(rows), types["order.held"], types["order.confirmed"], types["order.cancelled"], types["order.expired"],
		types["screening.sold_out"], types["screening.reopened"], delivered, received, again)
}
