// Orders as the box office sees them: their statuses, their unguessable codes, and reading one by its code or
// a screening's by status.

package booking

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// The statuses of an order: held while the buyer pays, then confirmed, cancelled or expired; a confirmed
// order may still be cancelled (a refund).
const (
	StatusHeld      = "held"
	StatusConfirmed = "confirmed"
	StatusCancelled = "cancelled"
	StatusExpired   = "expired"
)

// The checkout modes: an order is confirmed as it is made (instant), or held until its buyer pays (hold).
const (
	CheckoutInstant = "instant"
	CheckoutHold    = "hold"
)

// Order is a reservation with what the buyer and the operator see of it: its screening, and how it ended.
type Order struct {
	Reservation
	ScreeningName string     `json:"screening_name"`
	StartsAt      time.Time  `json:"starts_at"`
	EndedAt       *time.Time `json:"ended_at,omitempty"`
	CancelledBy   string     `json:"cancelled_by,omitempty"`
	// Holder is the token whose pass made the order (not shown: it is the buyer's place in line).
	Holder string `json:"-"`
}

// Live reports whether the order holds its seats (held or confirmed).
func (o Order) Live() bool { return o.Status == StatusHeld || o.Status == StatusConfirmed }

// codeEncoding writes order codes: 128 random bits in 26 lowercase base32 letters and digits, no padding.
var codeEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewOrderCode returns a new order code: 128 bits from crypto/rand, unguessable.
func NewOrderCode() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return codeEncoding.EncodeToString(b[:])
}

// ValidOrderCode reports whether code has the form of an order code: 26 characters of the code alphabet, or
// the 32 lowercase hex digits of an order made before codes were base32.
func ValidOrderCode(code string) bool {
	switch len(code) {
	case 26:
		b, err := codeEncoding.DecodeString(code)
		return err == nil && len(b) == 16
	case 32:
		return strings.Trim(code, "0123456789abcdef") == ""
	}
	return false
}

// orderRow is an order as SQL reads it (orderColumns, with the screening as s and the order as o).
type orderRow struct {
	ID            int64          `db:"id"`
	Code          string         `db:"code"`
	Status        string         `db:"status"`
	Screening     string         `db:"screening_id"`
	ScreeningName string         `db:"screening_name"`
	StartsAt      time.Time      `db:"starts_at"`
	CreatedAt     time.Time      `db:"created_at"`
	HoldExpiresAt sql.NullTime   `db:"hold_expires_at"`
	ConfirmedAt   sql.NullTime   `db:"confirmed_at"`
	EndedAt       sql.NullTime   `db:"ended_at"`
	CancelledBy   sql.NullString `db:"cancelled_by"`
	Holder        string         `db:"holder"`
}

const orderColumns = `o.id, o.code, o.status, o.screening_id, s.name AS screening_name, s.starts_at, o.created_at,
	o.hold_expires_at, o.confirmed_at, o.ended_at, o.cancelled_by, o.holder`

func timeOf(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func (r orderRow) order(seats []string) Order {
	return Order{
		Reservation: Reservation{ID: r.ID, Code: r.Code, Status: r.Status, Screening: r.Screening, Seats: seats,
			CreatedAt: r.CreatedAt.UTC(), HoldExpiresAt: timeOf(r.HoldExpiresAt), ConfirmedAt: timeOf(r.ConfirmedAt)},
		ScreeningName: r.ScreeningName, StartsAt: r.StartsAt.UTC(), EndedAt: timeOf(r.EndedAt), CancelledBy: r.CancelledBy.String,
		Holder: r.Holder,
	}
}

// withSeats is the order of r with its seats, in seat order (CompareSeatIDs).
func (s *Store) withSeats(ctx context.Context, r orderRow) (Order, error) {
	seats := []string{}
	if err := s.db.SelectContext(ctx, &seats, s.db.Rebind(`SELECT seat_id FROM reservation_seats WHERE reservation_id = ? ORDER BY seat_id`), r.ID); err != nil {
		return Order{}, fmt.Errorf("booking: seats of order %d: %w", r.ID, err)
	}
	return r.order(SortSeatIDs(seats)), nil
}

// Order returns the order with code: ErrBadOrderCode when code cannot be one, ErrOrderNotFound when none
// has it.
func (s *Store) Order(ctx context.Context, code string) (Order, error) {
	if !ValidOrderCode(code) {
		return Order{}, fmt.Errorf("booking: order: %w", ErrBadOrderCode)
	}
	r, err := s.orderByCode(ctx, code)
	if err != nil {
		return Order{}, err
	}
	return s.withSeats(ctx, r)
}

// orderByCode reads the order with code, without its seats.
func (s *Store) orderByCode(ctx context.Context, code string) (orderRow, error) {
	var r orderRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+orderColumns+`
		FROM reservations o JOIN screenings s ON s.id = o.screening_id WHERE o.code = ?`), code)
	if errors.Is(err, sql.ErrNoRows) {
		return orderRow{}, fmt.Errorf("booking: order: %w", ErrOrderNotFound)
	}
	if err != nil {
		return orderRow{}, fmt.Errorf("booking: order: %w", err)
	}
	return r, nil
}

// maxOrdersListed bounds one listing of a screening's orders.
const maxOrdersListed = 10000

// Orders lists the screening's orders with one of statuses (all when none), newest first, at most
// maxOrdersListed.
func (s *Store) Orders(ctx context.Context, screening string, statuses []string) ([]Order, error) {
	query := `SELECT ` + orderColumns + ` FROM reservations o JOIN screenings s ON s.id = o.screening_id WHERE o.screening_id = ?`
	args := []any{screening}
	if len(statuses) > 0 {
		query += ` AND o.status IN (?)`
		args = append(args, statuses)
	}
	query, args, err := sqlx.In(query+fmt.Sprintf(` ORDER BY o.id DESC LIMIT %d`, maxOrdersListed), args...)
	if err != nil {
		return nil, fmt.Errorf("booking: orders of %s: %w", screening, err)
	}
	var rows []orderRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(query), args...); err != nil {
		return nil, fmt.Errorf("booking: orders of %s: %w", screening, err)
	}
	seats, err := s.seatsOfOrders(ctx, screening)
	if err != nil {
		return nil, err
	}
	out := make([]Order, len(rows))
	for i, r := range rows {
		ss := seats[r.ID]
		if ss == nil {
			ss = []string{}
		}
		out[i] = r.order(ss)
	}
	return out, nil
}

// seatsOfOrders reads the seats of every order of the screening, by order id, in one query; each order's
// seats in seat order (CompareSeatIDs).
func (s *Store) seatsOfOrders(ctx context.Context, screening string) (map[int64][]string, error) {
	var rows []struct {
		ID   int64  `db:"reservation_id"`
		Seat string `db:"seat_id"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT reservation_id, seat_id FROM reservation_seats
		WHERE screening_id = ? ORDER BY reservation_id, seat_id`), screening); err != nil {
		return nil, fmt.Errorf("booking: seats of the orders of %s: %w", screening, err)
	}
	out := map[int64][]string{}
	for _, r := range rows {
		out[r.ID] = append(out[r.ID], r.Seat)
	}
	for _, seats := range out {
		SortSeatIDs(seats)
	}
	return out, nil
}

// ValidStatus reports whether status is one an order can have.
func ValidStatus(status string) bool {
	switch status {
	case StatusHeld, StatusConfirmed, StatusCancelled, StatusExpired:
		return true
	}
	return false
}
