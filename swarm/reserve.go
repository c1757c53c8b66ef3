// A user's REST calls once admitted: read the seat map, pick free seats and post the reservation, trying
// other seats after a conflict.

package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// reserve picks random available seats and posts them, trying other seats after a 409 SEAT_TAKEN or
// SEAT_LOCKED up to Retries times. It sets r's outcome (in hold checkout, a 201 leaves it to the checkout
// and sets r.Code), and reports whether the user gave up holding its admission (so the caller can hand the
// slot back). In hold checkout, a seat map with no seat available but some held is waited on, up to
// HeldWait, without spending a try: a hold may lapse. The user waits as a browser does, on its admitted
// socket, for a seats message that puts a seat back on sale, and only then reads the map again.
func (v *visit) reserve(ctx context.Context, sock *socket, pass string, r *result) (gaveUp bool) {
	locked := map[string]bool{} // seats another request held; a hint only, the map says what is sold
	var heldSince time.Time
	for try := 0; try <= v.cfg.Retries; try++ {
		seats, err := v.seatMap(ctx, v.src.client)
		if err != nil {
			r.fail(requestKind(ctx, "seat map"), err)
			return false
		}
		pick := pickSeats(seats, locked, v.cfg.Seats)
		if len(pick) == 0 {
			if !v.cfg.Checkout.hold() || !anyHeld(seats) {
				r.Outcome = SoldOut // the map shows no seat left
				return false
			}
			if done, gaveUp := v.awaitHeld(ctx, sock, &heldSince, r); done {
				return gaveUp
			}
			try-- // waiting for held seats spends no try
			continue
		}
		sentAt := time.Now()
		status, body, err := v.post(ctx, pass, pick)
		r.Reservations = append(r.Reservations, time.Since(sentAt))
		if err != nil {
			r.fail(requestKind(ctx, "reserve"), err)
			return false
		}
		switch {
		case status == http.StatusCreated:
			v.created(r, body, pick)
			return false
		case status == http.StatusConflict && body.Error.Code == "SOLD_OUT" && v.cfg.Checkout.hold():
			// The server may say sold out while some seats are only held; the seat map read next tells
			// held (wait for them) from sold (sold out). It spends a try, so a refusal that persists
			// while seats show available ends in gave_up rather than a loop.
			r.SoldOutAnswers++
		case status == http.StatusConflict && body.Error.Code == "SOLD_OUT":
			r.Outcome = SoldOut
			return false
		case status == http.StatusConflict && body.Error.Code == "NOT_ENOUGH_SEATS" && body.Error.Held > 0 && v.cfg.Checkout.hold():
			// Best available found too few free, and some only held (the map may still show seats free
			// that are being reserved): wait for a seat to come back, spending no try.
			if done, gaveUp := v.awaitHeld(ctx, sock, &heldSince, r); done {
				return gaveUp
			}
			try--
		case status == http.StatusConflict && body.Error.Code == "NOT_ENOUGH_SEATS":
			// Best available found too few free: the map read next tells what is left.
		case status == http.StatusConflict && (body.Error.Code == "SEAT_TAKEN" || body.Error.Code == "SEAT_LOCKED"):
			for _, seat := range body.Error.Seats {
				locked[seat] = true
			}
		default:
			r.fail(fmt.Sprintf("reserve %d %s", status, body.Error.Code),
				fmt.Errorf("POST %s: %d %s: %s", v.bookURL, status, body.Error.Code, body.Error.Message))
			return false
		}
	}
	// Every try met a seat someone else took first. If that someone took the last seats, the user ends as a
	// browser's user would, told the show is sold out, not as one who gave up while seats were left.
	if seats, err := v.seatMap(ctx, v.src.client); err == nil && len(pickSeats(seats, nil, 1)) == 0 &&
		(!v.cfg.Checkout.hold() || !anyHeld(seats)) {
		r.Outcome = SoldOut
		return false
	}
	r.Outcome = GaveUp
	return true
}

// awaitHeld waits, as a browser's user does, on the admitted socket for a seats message that puts a seat
// back on sale, while every seat left is only held: up to HeldWait from the first such wait (heldSince,
// set here the first time). It reports done when the user's visit ends (sold out, stopped, or the wait
// over: gaveUp, the caller hands the slot back), and otherwise counts the wait in r.
func (v *visit) awaitHeld(ctx context.Context, sock *socket, heldSince *time.Time, r *result) (done, gaveUp bool) {
	if heldSince.IsZero() {
		*heldSince = time.Now()
	}
	switch v.waitForSeats(ctx, sock, heldSince.Add(v.cfg.Checkout.HeldWait)) {
	case seatsBack:
		// A person sees the seat come back and reacts; the quickest takes it, and the others' maps show it
		// held by then rather than all of them posting for it at once.
		if !v.pause(ctx, payDelay(reactionMin, reactionMax)) {
			r.fail(stopKind(ctx), errors.New("stopped while waiting for held seats"))
			return true, false
		}
	case seatsSoldOut:
		r.Outcome = SoldOut
		return true, false
	case seatsWaitOver:
		r.Outcome = GaveUp
		return true, true
	case seatsStopped:
		r.fail(stopKind(ctx), errors.New("stopped while waiting for held seats"))
		return true, false
	}
	r.HeldWaits++
	return false, false
}

// created records a 201: the ticket, or in hold checkout the order held (its outcome comes with the
// payment); a hold-mode 201 that is not a held order with a code fails the user.
func (v *visit) created(r *result, body reservation, pick []string) {
	r.Outcome, r.Seats, r.Code = Ticket, body.Seats, body.Code
	if len(r.Seats) == 0 {
		r.Seats = pick
	}
	if !v.cfg.Checkout.hold() {
		return
	}
	if body.Status != "held" || body.Code == "" {
		r.fail("protocol", fmt.Errorf("%w: hold checkout, but the 201 has status %q and code %q", errProtocol, body.Status, body.Code))
		return
	}
	r.Outcome, r.heldAt = "", time.Now()
}

// reactionMin and reactionMax bound a waiting user's pause, uniform between them, from a seat coming back
// on sale to its reading the map again.
const (
	reactionMin = 200 * time.Millisecond
	reactionMax = 1500 * time.Millisecond
)

// What a wait for held seats ended with.
const (
	seatsBack     = iota // a seats message put a seat back on sale: read the map again
	seatsSoldOut         // the server said sold_out on the socket
	seatsWaitOver        // the wait passed its deadline, or the socket ended
	seatsStopped         // the run was stopped
)

// waitForSeats reads the admitted socket until a seats message puts a seat back on sale, sold_out comes,
// or deadline passes.
func (v *visit) waitForSeats(ctx context.Context, sock *socket, deadline time.Time) int {
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return seatsWaitOver
		}
		m, _, err := sock.read(ctx, nil, wait)
		switch {
		case ctx.Err() != nil:
			return seatsStopped
		case err != nil:
			return seatsWaitOver
		case m.Type == "sold_out":
			return seatsSoldOut
		case m.Type == "seats":
			for _, s := range m.Seats {
				if s.Status == "available" {
					return seatsBack
				}
			}
		}
	}
}

func anyHeld(seats []seat) bool {
	for _, s := range seats {
		if s.Status == "held" {
			return true
		}
	}
	return false
}

// requestKind names a failed REST call: the run's stop, or what was being called.
func requestKind(ctx context.Context, what string) string {
	if ctx.Err() != nil {
		return stopKind(ctx)
	}
	return what
}

// pickSeats returns up to n random available seats, avoiding those in avoid while others are left.
func pickSeats(seats []seat, avoid map[string]bool, n int) []string {
	var free, avoided []string
	for _, s := range seats {
		switch {
		case s.Status != "available":
		case avoid[s.ID]:
			avoided = append(avoided, s.ID)
		default:
			free = append(free, s.ID)
		}
	}
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	rand.Shuffle(len(avoided), func(i, j int) { avoided[i], avoided[j] = avoided[j], avoided[i] })
	free = append(free, avoided...)
	return free[:min(n, len(free))]
}

// seat is one seat of GET /api/screenings/{id}/seats.
type seat struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// apiError is the body of a refused request.
type apiError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Seats   []string `json:"seats"`
		Held    int      `json:"held"` // NOT_ENOUGH_SEATS: the seats only held, which may come back
	} `json:"error"`
}

// reservation is the body of a 201 (Seats; the order's Code and Status) or of a refusal (Error).
type reservation struct {
	Seats  []string `json:"seats"`
	Code   string   `json:"code"`
	Status string   `json:"status"`
	apiError
}

// seatMap reads the seat map with client (the user's source's, or the first source's for the run's own
// reads).
func (s *swarm) seatMap(ctx context.Context, client *http.Client) ([]seat, error) {
	var seats []seat
	if err := getJSON(ctx, client, s.seatURL, &seats); err != nil {
		return nil, err
	}
	return seats, nil
}

func (v *visit) post(ctx context.Context, pass string, seats []string) (int, reservation, error) {
	var want any = map[string][]string{"seats": seats}
	if v.cfg.Best {
		want = map[string]int{"count": len(seats)}
	}
	body, err := json.Marshal(want)
	if err != nil {
		return 0, reservation{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.bookURL, bytes.NewReader(body))
	if err != nil {
		return 0, reservation{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+pass)
	resp, err := v.src.client.Do(req)
	if err != nil {
		return 0, reservation{}, err
	}
	defer resp.Body.Close()
	var out reservation
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&out); err != nil && resp.StatusCode == http.StatusCreated {
		return 0, reservation{}, fmt.Errorf("POST %s: decode: %w", v.bookURL, err)
	}
	return resp.StatusCode, out, nil
}
