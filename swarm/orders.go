// The check of the orders in PostgreSQL, where the database has the last word: after the run settles, every
// seat is in exactly one live, confirmed order or in none (available), no order is still held, each user's
// order ends as the user saw it end, and every order transition has its webhook in the outbox.

package swarm

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Orders is what PostgreSQL holds for the screening's orders at the end of the run.
type Orders struct {
	// Skipped says why nothing was read (no database URL); the fields below are then zero.
	Skipped string `json:"skipped,omitempty"`
	// ByStatus counts the screening's orders by status.
	ByStatus map[string]int `json:"by_status,omitempty"`
	// Seats counts the screening's seats; Sold those in a live confirmed order, Held those in a live held
	// one, Available the others.
	Seats     int `json:"seats"`
	Sold      int `json:"sold"`
	Held      int `json:"held"`
	Available int `json:"available"`
	// LastConfirmedAtMs is the latest confirmed_at of the orders still confirmed (Unix ms; 0: none).
	LastConfirmedAtMs int64 `json:"last_confirmed_at_ms,omitempty"`
	// HoldToConfirm is created_at to confirmed_at of the orders that were held and confirmed, as the
	// database stamped them.
	HoldToConfirm Latency `json:"hold_to_confirm"`
	// SoldOutEvents are the screening.sold_out messages of the outbox, with the seats the orders say were
	// free or only held at each.
	SoldOutEvents []SoldOutEvent `json:"sold_out_events,omitempty"`
}

// SoldOutEvent is one closing of the line as sold out: when (Unix ms), and how many seats were in no order
// (Free) or in one not yet confirmed (Held) then, by the orders' times (within closingSlack).
type SoldOutEvent struct {
	AtMs int64 `json:"at_ms"`
	Free int   `json:"free"`
	Held int   `json:"held"`
}

// orderRow is one order of the screening.
type orderRow struct {
	code, status, cancelledBy string
	held                      bool // it had a hold (hold_expires_at set)
	createdAt                 time.Time
	confirmedAt, endedAt      sql.NullTime
}

// outboxRow is one message of the webhooks' outbox.
type outboxRow struct {
	id, typ   string
	code      string // the order's, for an order event
	screening string // the screening's, for a screening event
	delivered bool
	createdAt time.Time
}

// orderState is what the database read: the orders by code, each seat's live rows, the outbox.
type orderState struct {
	orders map[string]orderRow
	seats  []string
	live   map[string][]string // seat -> codes of its live rows
	dead   map[string][]string // seat -> codes of its rows no longer live
	outbox []outboxRow
}

// readOrders reads the screening's orders, seats and outbox from db.
func readOrders(ctx context.Context, db *sql.DB, screening string) (orderState, error) {
	st := orderState{orders: map[string]orderRow{}, live: map[string][]string{}, dead: map[string][]string{}}
	rows, err := db.QueryContext(ctx, `SELECT code, status, COALESCE(cancelled_by, ''), hold_expires_at IS NOT NULL, created_at, confirmed_at, ended_at
		FROM reservations WHERE screening_id = $1`, screening)
	if err != nil {
		return st, fmt.Errorf("orders: %w", err)
	}
	for rows.Next() {
		var o orderRow
		if err := rows.Scan(&o.code, &o.status, &o.cancelledBy, &o.held, &o.createdAt, &o.confirmedAt, &o.endedAt); err != nil {
			rows.Close()
			return st, fmt.Errorf("orders: %w", err)
		}
		st.orders[o.code] = o
	}
	if err := closeRows(rows); err != nil {
		return st, fmt.Errorf("orders: %w", err)
	}

	rows, err = db.QueryContext(ctx, `SELECT seat_id FROM seats WHERE screening_id = $1 ORDER BY seat_id`, screening)
	if err != nil {
		return st, fmt.Errorf("seats: %w", err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return st, fmt.Errorf("seats: %w", err)
		}
		st.seats = append(st.seats, id)
	}
	if err := closeRows(rows); err != nil {
		return st, fmt.Errorf("seats: %w", err)
	}

	rows, err = db.QueryContext(ctx, `SELECT rs.seat_id, rs.live, r.code FROM reservation_seats rs
		JOIN reservations r ON r.id = rs.reservation_id WHERE rs.screening_id = $1`, screening)
	if err != nil {
		return st, fmt.Errorf("reservation seats: %w", err)
	}
	for rows.Next() {
		var seat, code string
		var live bool
		if err := rows.Scan(&seat, &live, &code); err != nil {
			rows.Close()
			return st, fmt.Errorf("reservation seats: %w", err)
		}
		if live {
			st.live[seat] = append(st.live[seat], code)
		} else {
			st.dead[seat] = append(st.dead[seat], code)
		}
	}
	if err := closeRows(rows); err != nil {
		return st, fmt.Errorf("reservation seats: %w", err)
	}

	st.outbox, err = readOutbox(ctx, db, screening, st.orders)
	return st, err
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// readOutbox reads the outbox's messages about the screening: its orders' and its own.
func readOutbox(ctx context.Context, db *sql.DB, screening string, orders map[string]orderRow) ([]outboxRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT msg_id, type, payload, delivered_at IS NOT NULL, created_at FROM webhook_outbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("webhook outbox: %w", err)
	}
	var out []outboxRow
	for rows.Next() {
		var m outboxRow
		var payload string
		if err := rows.Scan(&m.id, &m.typ, &payload, &m.delivered, &m.createdAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("webhook outbox: %w", err)
		}
		var ev struct {
			Data struct {
				Code      string `json:"code"`
				Screening string `json:"screening"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(payload), &ev)
		m.code, m.screening = ev.Data.Code, ev.Data.Screening
		if _, ours := orders[m.code]; ours || m.code == "" && m.screening == screening {
			out = append(out, m)
		}
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("webhook outbox: %w", err)
	}
	return out, nil
}

// heldOrders counts the screening's orders still held.
func heldOrders(ctx context.Context, db *sql.DB, screening string) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM reservations WHERE screening_id = $1 AND status = 'held'`, screening).Scan(&n)
	return n, err
}

// wantStatus is the status a user's order must have in the database, by how the user saw it end ("": the
// user's view says nothing, an error).
func wantStatus(o Outcome) string {
	switch o {
	case Ticket:
		return "confirmed"
	case Refunded:
		return "cancelled"
	case Lapsed, Unpaid:
		return "expired"
	}
	return ""
}

// checkOrders checks the database's end state against itself and the users' results, and returns the
// figures and every problem found, one sentence each.
func checkOrders(st orderState, results []result) (Orders, []string) {
	o := Orders{ByStatus: map[string]int{}, Seats: len(st.seats)}
	var problems []string
	var holdToConfirm []time.Duration
	for _, row := range st.orders {
		o.ByStatus[row.status]++
		if row.status == "held" {
			problems = append(problems, fmt.Sprintf("order %s is still held after the run settled", row.code))
		}
		if row.status == "confirmed" && row.confirmedAt.Valid && row.confirmedAt.Time.UnixMilli() > o.LastConfirmedAtMs {
			o.LastConfirmedAtMs = row.confirmedAt.Time.UnixMilli()
		}
		if row.held && row.confirmedAt.Valid {
			holdToConfirm = append(holdToConfirm, row.confirmedAt.Time.Sub(row.createdAt))
		}
	}
	o.HoldToConfirm = summarizeLatency(holdToConfirm)

	for _, seat := range st.seats {
		live := st.live[seat]
		switch {
		case len(live) > 1:
			problems = append(problems, fmt.Sprintf("seat %s is in %d live orders: %v", seat, len(live), live))
		case len(live) == 0:
			o.Available++
		default:
			switch st.orders[live[0]].status {
			case "confirmed":
				o.Sold++
			case "held":
				o.Held++
			default:
				problems = append(problems, fmt.Sprintf("seat %s is live in order %s, which is %s", seat, live[0], st.orders[live[0]].status))
			}
		}
		for _, code := range st.dead[seat] {
			if s := st.orders[code].status; s == "held" || s == "confirmed" {
				problems = append(problems, fmt.Sprintf("seat %s of order %s, which is %s, is no longer live", seat, code, s))
			}
		}
	}

	users := map[string]bool{}
	for _, r := range results {
		if r.Code == "" {
			continue
		}
		users[r.Code] = true
		want := wantStatus(r.Outcome)
		row, ok := st.orders[r.Code]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("order %s of a user (%s) is not in the database", r.Code, r.Outcome))
		case want != "" && row.status != want:
			problems = append(problems, fmt.Sprintf("order %s is %s in the database, but its user saw it end %s", r.Code, row.status, r.Outcome))
		case r.Outcome == Refunded && row.cancelledBy != "admin":
			problems = append(problems, fmt.Sprintf("order %s was refunded by the operator, but the database says cancelled by %q", r.Code, row.cancelledBy))
		}
	}
	for code := range st.orders {
		if !users[code] {
			problems = append(problems, fmt.Sprintf("order %s is in the database but no user made it", code))
		}
	}
	problems = append(problems, checkOutbox(st)...)
	var closings []string
	o.SoldOutEvents, closings = checkClosings(st)
	problems = append(problems, closings...)
	sort.Strings(problems)
	return o, problems
}

// closingSlack is how far apart in time the database's stamps of one moment may be (a transaction's now,
// the server's clock, the outbox row's default): a seat counts as taken at t if an order had it within
// this of t.
const closingSlack = time.Second

// checkClosings checks each screening.sold_out of the outbox against the orders: when the line closed as
// sold out, every seat was in an order, and that order confirmed. It returns each closing with the seats
// that were free and held then, and a problem for each that closed too soon.
func checkClosings(st orderState) ([]SoldOutEvent, []string) {
	seatsOf := map[string][]string{} // order code -> its seats
	for seat, codes := range st.live {
		for _, c := range codes {
			seatsOf[c] = append(seatsOf[c], seat)
		}
	}
	for seat, codes := range st.dead {
		for _, c := range codes {
			seatsOf[c] = append(seatsOf[c], seat)
		}
	}
	var events []SoldOutEvent
	var problems []string
	for _, m := range st.outbox {
		if m.typ != "screening.sold_out" {
			continue
		}
		t := m.createdAt
		taken, sold := map[string]bool{}, map[string]bool{}
		for code, row := range st.orders {
			if row.createdAt.After(t.Add(closingSlack)) || row.endedAt.Valid && row.endedAt.Time.Before(t.Add(-closingSlack)) {
				continue // not yet made, or over, at t
			}
			for _, seat := range seatsOf[code] {
				taken[seat] = true
				if row.confirmedAt.Valid && !row.confirmedAt.Time.After(t.Add(closingSlack)) {
					sold[seat] = true
				}
			}
		}
		ev := SoldOutEvent{AtMs: t.UnixMilli(), Free: len(st.seats) - len(taken), Held: len(taken) - len(sold)}
		events = append(events, ev)
		if ev.Free > 0 || ev.Held > 0 {
			problems = append(problems, fmt.Sprintf("the line closed as sold out at %s with %d seats in no order and %d only held",
				t.UTC().Format("15:04:05.000"), ev.Free, ev.Held))
		}
	}
	return events, problems
}

// checkOutbox checks that every order transition has its message in the outbox: held (if the order was),
// confirmed (if it was), and cancelled or expired (if it ended so). An empty outbox is webhooks off on the
// server, not a problem: the receiver's report says so.
func checkOutbox(st orderState) []string {
	if len(st.outbox) == 0 {
		return nil
	}
	have := map[string]map[string]int{} // code -> type -> messages
	for _, m := range st.outbox {
		if m.code == "" {
			continue
		}
		if have[m.code] == nil {
			have[m.code] = map[string]int{}
		}
		have[m.code][m.typ]++
	}
	var problems []string
	for code, row := range st.orders {
		var want []string
		if row.held {
			want = append(want, "order.held")
		}
		if row.confirmedAt.Valid {
			want = append(want, "order.confirmed")
		}
		if row.status == "cancelled" || row.status == "expired" {
			want = append(want, "order."+row.status)
		}
		for _, typ := range want {
			switch n := have[code][typ]; {
			case n == 0:
				problems = append(problems, fmt.Sprintf("order %s: no %s message in the webhook outbox", code, typ))
			case n > 1:
				problems = append(problems, fmt.Sprintf("order %s: %d %s messages in the webhook outbox", code, n, typ))
			}
		}
	}
	return problems
}

// outboxIDs are the outbox's message ids, and how many of them the server marks delivered.
func (st orderState) outboxIDs() ([]string, int) {
	ids := make([]string, 0, len(st.outbox))
	delivered := 0
	for _, m := range st.outbox {
		ids = append(ids, m.id)
		if m.delivered {
			delivered++
		}
	}
	return ids, delivered
}
