// After the bursts: what the database holds for a screening, exactly one winner per seat or not.

package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// verify reads what was sold in a screening: exactly `winners` reservations of one seat each, as many as the
// burst's 201s, every one of them with status (held, or confirmed), no seat twice.
func verify(ctx context.Context, benchURL, id, status string, created, winners int) (verification, error) {
	db, err := sqlx.Open("postgres", benchURL)
	if err != nil {
		return verification{}, fmt.Errorf("verify: %w", err)
	}
	defer db.Close()
	var rows []struct {
		Seat  string `db:"seat_id"`
		Count int    `db:"n"`
	}
	if err := db.SelectContext(ctx, &rows, `SELECT seat_id, COUNT(*) AS n FROM reservation_seats WHERE screening_id = $1 GROUP BY seat_id ORDER BY seat_id`, id); err != nil {
		return verification{}, fmt.Errorf("verify: %w", err)
	}
	var reservations int
	if err := db.GetContext(ctx, &reservations, `SELECT COUNT(*) FROM reservations WHERE screening_id = $1`, id); err != nil {
		return verification{}, fmt.Errorf("verify: %w", err)
	}
	var withStatus int
	if err := db.GetContext(ctx, &withStatus, `SELECT COUNT(*) FROM reservations WHERE screening_id = $1 AND status = $2`, id, status); err != nil {
		return verification{}, fmt.Errorf("verify: %w", err)
	}
	v := verification{Screening: id, Reservations: reservations, DistinctSeats: len(rows), Status: status, WithStatus: withStatus}
	for _, r := range rows {
		v.SeatRows += r.Count
		if r.Count > 1 {
			v.Twice = append(v.Twice, r.Seat)
		}
	}
	v.OK = created == winners && reservations == winners && withStatus == winners && v.SeatRows == winners && v.DistinctSeats == winners && len(v.Twice) == 0
	verdict := "OK"
	if !v.OK {
		verdict = "FAILED"
	}
	v.Text = fmt.Sprintf("%s: %d × 201, %d reservations (%d %s), %d seat rows, %d distinct seats (want %d of each); sold twice: %s",
		verdict, created, reservations, withStatus, status, v.SeatRows, v.DistinctSeats, winners, orNone(v.Twice))
	return v, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
