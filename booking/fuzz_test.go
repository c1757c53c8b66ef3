// Fuzz targets of the seat ids that arrive from outside: a request's seat list and a listed catalog.

package booking_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// The fuzz targets of the seat ids that arrive from outside: a reservation's seat list (Booking.ParseSeats)
// and an operator's listed catalog (booking.SeatsFromIDs). A fuzz input is one string of ids separated by
// commas ("" is the empty list). Seeds: testdata/fuzz/<FuzzName>.

// fuzzRows × fuzzPerRow is the catalog of screening fz1 (booking.Grid: rows A..Z, numbers 1..40).
const (
	fuzzRows, fuzzPerRow = 26, 40
	fuzzMaxSeats         = 4
	// maxErrorLen bounds what a refusal may echo of its input: an id is truncated, never repeated whole.
	maxErrorLen = 200
)

func splitIDs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// wellFormed is an independent reading of a listed seat id: 1–3 capital letters, then a number 1–9999
// without a leading zero.
func wellFormed(id string) bool {
	letters := 0
	for letters < len(id) && id[letters] >= 'A' && id[letters] <= 'Z' {
		letters++
	}
	digits := id[letters:]
	if letters < 1 || letters > 3 || len(digits) < 1 || len(digits) > 4 || digits[0] == '0' {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// inGrid reports whether id is a seat of fz1.
func inGrid(id string) bool {
	if len(id) < 2 || id[0] < 'A' || id[0] >= 'A'+fuzzRows {
		return false
	}
	n, err := strconv.Atoi(id[1:])
	return err == nil && n >= 1 && n <= fuzzPerRow && strconv.Itoa(n) == id[1:]
}

// wantClearError checks a refusal: the sentinel, a message of valid UTF-8 (it goes into a JSON body) that
// does not echo unbounded input.
func wantClearError(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	msg := err.Error()
	if !errors.Is(err, sentinel) || msg == "" || !utf8.ValidString(msg) || len(msg) > maxErrorLen {
		t.Fatalf("%s = %q (%v), want a short, valid UTF-8 message wrapping %v", what, msg, err, sentinel)
	}
}

// FuzzSeatsFromIDs: an operator's listed catalog is accepted exactly when every id is well formed and none
// repeats, and then becomes those seats in that order (row and number read back to the id); anything else
// is ErrBadScreening with a clear message.
func FuzzSeatsFromIDs(f *testing.F) {
	f.Fuzz(func(t *testing.T, list string) {
		ids := splitIDs(list)
		want := true
		seen := map[string]bool{}
		for _, id := range ids {
			if !wellFormed(id) || seen[id] {
				want = false
			}
			seen[id] = true
		}
		seats, err := booking.SeatsFromIDs(ids)
		if err != nil {
			if want {
				t.Fatalf("SeatsFromIDs(%q) = %v, want the seats", ids, err)
			}
			wantClearError(t, "SeatsFromIDs", err, booking.ErrBadScreening)
			return
		}
		if !want {
			t.Fatalf("SeatsFromIDs(%q) accepted a malformed or repeated id: %+v", ids, seats)
		}
		if len(seats) != len(ids) {
			t.Fatalf("SeatsFromIDs(%q) = %d seats, want %d", ids, len(seats), len(ids))
		}
		for i, s := range seats {
			if s.ID != ids[i] || s.Row+strconv.Itoa(s.Number) != s.ID || s.Number < 1 || s.Number > 9999 || len(s.Row) > 3 {
				t.Fatalf("SeatsFromIDs(%q)[%d] = %+v", ids, i, s)
			}
		}
	})
}

// FuzzParseSeats: a requested seat list of fz1 is accepted exactly when it has 1..max seats, each in the
// catalog, none twice, and comes back sorted and unique with the same seats; anything else is
// ErrBadRequest with a clear message.
func FuzzParseSeats(f *testing.F) {
	env := testenv.New(f, testenv.Embedded)
	env.Demo(f, "fz1", fuzzRows, fuzzPerRow)
	q := queue.New(env.Redis, env.Prefix)
	b := booking.New(booking.NewStore(env.DB), q, q, pass.NewSecretIssuer([]byte("fuzz-secret-0123456789abcdef")),
		booking.Settings{LockWait: time.Second, LockLease: 10 * time.Second, MaxSeats: fuzzMaxSeats})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, list string) {
		ids := splitIDs(list)
		want := len(ids) >= 1 && len(ids) <= fuzzMaxSeats
		seen := map[string]bool{}
		for _, id := range ids {
			if !inGrid(id) || seen[id] {
				want = false
			}
			seen[id] = true
		}
		got, err := b.ParseSeats(ctx, "fz1", slices.Clone(ids))
		if err != nil {
			if want {
				t.Fatalf("ParseSeats(%q) = %v, want the seats", ids, err)
			}
			wantClearError(t, "ParseSeats", err, booking.ErrBadRequest)
			return
		}
		if !want {
			t.Fatalf("ParseSeats(%q) = %q, nil; want ErrBadRequest", ids, got)
		}
		if !slices.Equal(got, slices.Sorted(slices.Values(ids))) {
			t.Fatalf("ParseSeats(%q) = %q, want the same seats sorted", ids, got)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Fatalf("ParseSeats(%q) = %q: not sorted and unique", ids, got)
			}
		}
	})
}
