// What the store reads: screenings with their seat counts, a seat map, a catalog, the reservation a pass
// made, and which seats are sold.

package booking

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jmoiron/sqlx"
)

// Summary is a screening with its seat counts.
type Summary struct {
	Screening
	SeatsTotal     int `db:"seats_total" json:"seats_total"`
	SeatsAvailable int `db:"seats_available" json:"seats_available"`
	// SeatsHeld are in orders held while their buyers pay; SeatsSold in confirmed orders.
	SeatsHeld int `db:"seats_held" json:"seats_held"`
	SeatsSold int `db:"seats_sold" json:"seats_sold"`
	// Checkout is the screening's own checkout mode ("instant" or "hold"); empty: the server's.
	Checkout string `db:"checkout" json:"checkout,omitempty"`
	// GateMode is the screening's own gate mode (GateAuto, GateQueueAll, GatePassthrough); empty: the
	// server's. The operator's view shows it; the public one does not.
	GateMode string `db:"gate_mode" json:"-"`
	// PowCost is the screening's own proof-of-work cost (0: none); nil: the server's pow.cost. The views
	// show the effective one.
	PowCost *int `db:"pow_cost" json:"-"`
	// CodesRequired says a new place needs an access code (codes.go).
	CodesRequired bool `db:"codes_required" json:"code_required"`
	// ClosedAt is when the operator closed the sale (nil while it is not closed).
	ClosedAt *time.Time `db:"closed_at" json:"closed_at,omitempty"`
	// ArchivedAt is when the operator archived the screening (nil while it is not): off the public list.
	ArchivedAt *time.Time `db:"archived_at" json:"archived_at,omitempty"`
}

const summarySQL = `SELECT x.*, x.seats_total - x.seats_held - x.seats_sold AS seats_available FROM (
	SELECT s.id, s.name, s.starts_at, s.sale_opens_at, s.closed_at, s.archived_at, COALESCE(s.checkout, '') AS checkout, COALESCE(s.gate_mode, '') AS gate_mode, s.pow_cost, s.codes_required,
	(SELECT COUNT(*) FROM seats t WHERE t.screening_id = s.id) AS seats_total,
	(SELECT COUNT(*) FROM reservation_seats r JOIN reservations o ON o.id = r.reservation_id
		WHERE r.screening_id = s.id AND r.live AND o.status = 'held') AS seats_held,
	(SELECT COUNT(*) FROM reservation_seats r JOIN reservations o ON o.id = r.reservation_id
		WHERE r.screening_id = s.id AND r.live AND o.status = 'confirmed') AS seats_sold
	FROM screenings s`

// Screenings lists every screening with its seat counts, by start time.
func (s *Store) Screenings(ctx context.Context) ([]Summary, error) {
	out := []Summary{}
	if err := s.db.SelectContext(ctx, &out, summarySQL+`) x ORDER BY x.starts_at, x.id`); err != nil {
		return nil, fmt.Errorf("booking: screenings: %w", err)
	}
	return out, nil
}

// Screening returns one screening with its seat counts, or ErrUnknownScreening.
func (s *Store) Screening(ctx context.Context, id string) (Summary, error) {
	var out Summary
	err := s.db.GetContext(ctx, &out, s.db.Rebind(summarySQL+` WHERE s.id = ?) x`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return Summary{}, fmt.Errorf("booking: screening %q: %w", id, ErrUnknownScreening)
	}
	if err != nil {
		return Summary{}, fmt.Errorf("booking: screening %q: %w", id, err)
	}
	return out, nil
}

// Seats returns the seat map of a screening from SQL, in row and number order. Booking.Seats serves the
// map during a sale from caches; this is what fills them.
func (s *Store) Seats(ctx context.Context, screening string) ([]SeatStatus, error) {
	out := []SeatStatus{}
	err := s.db.SelectContext(ctx, &out, s.db.Rebind(`SELECT t.seat_id, t.row_label, t.number,
		CASE WHEN o.status IS NULL THEN 'available' WHEN o.status = 'held' THEN 'held' ELSE 'sold' END AS status
		FROM seats t LEFT JOIN reservation_seats r ON r.screening_id = t.screening_id AND r.seat_id = t.seat_id AND r.live
		LEFT JOIN reservations o ON o.id = r.reservation_id
		WHERE t.screening_id = ? ORDER BY LENGTH(t.row_label), t.row_label, t.number`), screening)
	if err != nil {
		return nil, fmt.Errorf("booking: seats of %s: %w", screening, err)
	}
	return out, nil
}

// catalog loads the seats of a screening.
func (s *Store) catalog(ctx context.Context, screening string) (*catalog, error) {
	c := &catalog{}
	// The screening's row says it exists: a site-wide room (the gate's) has no seats.
	err := s.db.GetContext(ctx, &c.opensAt, s.db.Rebind(`SELECT sale_opens_at FROM screenings WHERE id = ?`), screening)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("booking: catalog of %q: %w", screening, ErrUnknownScreening)
	}
	if err != nil {
		return nil, fmt.Errorf("booking: catalog of %s: %w", screening, err)
	}
	if err := s.db.SelectContext(ctx, &c.seats, s.db.Rebind(`SELECT seat_id, row_label, number FROM seats
		WHERE screening_id = ? ORDER BY LENGTH(row_label), row_label, number`), screening); err != nil {
		return nil, fmt.Errorf("booking: catalog of %s: %w", screening, err)
	}
	c.ids = make(map[string]bool, len(c.seats))
	for _, seat := range c.seats {
		c.ids[seat.ID] = true
	}
	return c, nil
}

// byPass returns the reservation a pass made, with the Idempotency-Key and body hash of its request, or
// sql.ErrNoRows.
func (s *Store) byPass(ctx context.Context, passID string) (Reservation, string, string, error) {
	var row struct {
		orderRow
		Key  sql.NullString `db:"idempotency_key"`
		Hash sql.NullString `db:"request_hash"`
	}
	err := s.db.GetContext(ctx, &row, s.db.Rebind(`SELECT `+orderColumns+`, o.idempotency_key, o.request_hash
		FROM reservations o JOIN screenings s ON s.id = o.screening_id WHERE o.pass_id = ?`), passID)
	if err != nil {
		return Reservation{}, "", "", err
	}
	o, err := s.withSeats(ctx, row.orderRow)
	if err != nil {
		return Reservation{}, "", "", err
	}
	// SeatsLeft is not known for a past reservation: -1, as when the count after commit failed.
	r := o.Reservation
	r.SeatsLeft = -1
	return r, row.Key.String, row.Hash.String, nil
}

// soldAmong returns which of the seats are sold, sorted in Go's order (as the seats were), inside a
// transaction or not.
func soldAmong(ctx context.Context, q querier, screening string, seats []string) ([]string, error) {
	query, args, err := sqlx.In(`SELECT seat_id FROM reservation_seats WHERE screening_id = ? AND seat_id IN (?) AND live`, screening, seats)
	if err != nil {
		return nil, err
	}
	var sold []string
	if err := q.SelectContext(ctx, &sold, q.Rebind(query), args...); err != nil {
		return nil, err
	}
	sort.Strings(sold)
	return sold, nil
}

// seatsTaken counts the seats of a screening of total seats by state, outside any transaction: after a
// commit, it sees the orders that committed beside it. Only when none is available does it tell held from
// sold (a second count, of the held): most commits need the one count the partial index answers.
func (s *Store) seatsTaken(ctx context.Context, screening string, total int) (counts, error) {
	live, err := countSold(ctx, s.db, screening)
	if err != nil || live < total {
		return counts{available: total - live, sold: live}, err
	}
	var held int
	err = s.db.GetContext(ctx, &held, s.db.Rebind(`SELECT COUNT(*) FROM reservation_seats r JOIN reservations o ON o.id = r.reservation_id
		WHERE r.screening_id = ? AND r.live AND o.status = 'held'`), screening)
	return counts{available: total - live, held: held, sold: live - held}, err
}

// countSold counts the taken (held or sold) seats of a screening, inside a transaction or not.
func countSold(ctx context.Context, q querier, screening string) (int, error) {
	var n int
	err := q.GetContext(ctx, &n, q.Rebind(`SELECT COUNT(*) FROM reservation_seats WHERE screening_id = ? AND live`), screening)
	return n, err
}
