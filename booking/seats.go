// Seat ids and seats under one grammar: a request's seat list checked against a catalog, an operator's
// listed catalog, and the grid of rows and numbers with its limits.

package booking

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// seatIDRe is the one grammar of a seat id, by which a request's seats and an operator's listed catalog are
// both read: a row of 1–3 capital letters and a number 1–9999 within it, with no leading zero ("A1", "AB12").
// Grid makes ids of it too.
var seatIDRe = regexp.MustCompile(`^([A-Z]{1,3})([1-9][0-9]{0,3})$`)

// Limits of a grid of seats (rows × seats_per_row), within what a seat id can name.
const (
	// MaxRows bounds a grid's rows: A … ZZ.
	MaxRows = 702
	// MaxSeatsPerRow keeps seat numbers to the four digits a seat id may have ("A9999").
	MaxSeatsPerRow = 9999
)

// ParseSeats checks a requested seat list against a screening's catalog: 1..max seats, each once, each
// existing. It returns the ids sorted, the canonical order of a request.
func (b *Booking) ParseSeats(ctx context.Context, screening string, seats []string) ([]string, error) {
	if len(seats) == 0 {
		return nil, badRequest("no seats requested")
	}
	if len(seats) > b.settings.MaxSeats {
		return nil, badRequest("%d seats requested, at most %d per reservation", len(seats), b.settings.MaxSeats)
	}
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seats))
	for _, s := range seats {
		if !seatIDRe.MatchString(s) || !cat.ids[s] {
			return nil, badRequest("no seat %q in %s", truncate(s, 16), screening)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	if i := firstRepeat(out); i >= 0 {
		return nil, badRequest("seat %s requested twice", out[i])
	}
	return out, nil
}

// CompareSeatIDs orders seat ids as a person reads them and as the seat map lays them out: by row, a shorter
// label first (A … Z, then AA …), then by number within the row, so D9 comes before D10. It is the order of
// every seat list booking returns; requests keep the plain text order (ParseSeats), which their locks and
// idempotency hashes were made with. An id outside the seat grammar sorts after every seat id, by text.
func CompareSeatIDs(a, b string) int {
	ra, na, okA := splitSeatID(a)
	rb, nb, okB := splitSeatID(b)
	switch {
	case okA && okB:
		if c := cmp.Compare(len(ra), len(rb)); c != 0 {
			return c
		}
		if c := strings.Compare(ra, rb); c != 0 {
			return c
		}
		return cmp.Compare(na, nb)
	case okA:
		return -1
	case okB:
		return 1
	}
	return strings.Compare(a, b)
}

// SortSeatIDs sorts ids in place by CompareSeatIDs and returns them.
func SortSeatIDs(ids []string) []string {
	slices.SortFunc(ids, CompareSeatIDs)
	return ids
}

// splitSeatID is the row and number of a seat id (seatIDRe), false when id is not one.
func splitSeatID(id string) (row string, number int, ok bool) {
	m := seatIDRe.FindStringSubmatch(id)
	if m == nil {
		return "", 0, false
	}
	n, _ := strconv.Atoi(m[2]) // one to four digits: always a number
	return m[1], n, true
}

func firstRepeat(sorted []string) int {
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return i
		}
	}
	return -1
}

// Seat is one seat of a screening's catalog.
type Seat struct {
	ID     string `db:"seat_id"`
	Row    string `db:"row_label"`
	Number int    `db:"number"`
}

// SeatsFromIDs turns listed seat ids into the catalog's seats, refusing a malformed or repeated id.
func SeatsFromIDs(ids []string) ([]Seat, error) {
	seats := make([]Seat, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		m := seatIDRe.FindStringSubmatch(id)
		if m == nil {
			return nil, badScreening("seat id %q: want a row of 1–3 capital letters and a number 1–9999, like A1", truncate(id, 16))
		}
		if seen[id] {
			return nil, badScreening("seat %s listed twice", id)
		}
		seen[id] = true
		n, _ := strconv.Atoi(m[2])
		seats = append(seats, Seat{ID: id, Row: m[1], Number: n})
	}
	return seats, nil
}

// SeatsFromGrid returns the seats of rows × perRow (Grid), refusing a grid with no seat, more rows or seats
// per row than a seat id can name, or more than MaxSeatsPerScreening seats.
func SeatsFromGrid(rows, perRow int) ([]Seat, error) {
	if rows < 1 || rows > MaxRows || perRow < 1 || perRow > MaxSeatsPerRow || rows*perRow > MaxSeatsPerScreening {
		return nil, badScreening("rows (1–%d) × seats_per_row (1–%d) must make 1 to %d seats, or list seats",
			MaxRows, MaxSeatsPerRow, MaxSeatsPerScreening)
	}
	return Grid(rows, perRow), nil
}

// Grid returns rows × perRow seats: rows A, B, … Z, AA, AB, …; seats numbered from 1 ("A1" … "J10").
func Grid(rows, perRow int) []Seat {
	seats := make([]Seat, 0, rows*perRow)
	for r := 0; r < rows; r++ {
		row := rowLabel(r)
		for n := 1; n <= perRow; n++ {
			seats = append(seats, Seat{ID: fmt.Sprintf("%s%d", row, n), Row: row, Number: n})
		}
	}
	return seats
}

func rowLabel(i int) string {
	label := ""
	for i++; i > 0; i = (i - 1) / 26 {
		label = string(rune('A'+(i-1)%26)) + label
	}
	return label
}
