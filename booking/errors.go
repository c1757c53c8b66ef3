// The errors booking returns: its sentinels, the typed errors that name the seats at fault or carry the words
// of a refusal, and the bound on what a message echoes of its input.

package booking

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrUnknownScreening: no screening has that id.
	ErrUnknownScreening = errors.New("unknown screening")
	// ErrSoldOut: no seat of the screening is left.
	ErrSoldOut = errors.New("sold out")
	// ErrSeatLocked: another request holds a lock on a requested seat past lock_wait.
	ErrSeatLocked = errors.New("seat locked by another reservation")
	// ErrSeatTaken: a requested seat is already sold.
	ErrSeatTaken = errors.New("seat already taken")
	// ErrBadRequest: the seat list is empty, too long, repeats a seat, or names a seat that does not exist
	// (an InvalidError says which).
	ErrBadRequest = errors.New("bad request")
	// ErrLockLost: the request's seat locks lapsed before it could commit (a newer holder took them); it
	// booked nothing.
	ErrLockLost = errors.New("seat hold expired before the reservation committed")
	// ErrIdempotencyMismatch: an Idempotency-Key already reserved other seats.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with another request")
	// ErrScreeningExists: a screening with that id exists already.
	ErrScreeningExists = errors.New("screening exists")
	// ErrBadScreening: a screening to create is malformed (its id, times, seats or admission settings; an
	// InvalidError says which).
	ErrBadScreening = errors.New("bad screening")
	// ErrSaleHasOrders: a reset would delete live orders (held or confirmed), and was not forced.
	ErrSaleHasOrders = errors.New("the sale has orders")
	// ErrArchived: the screening is archived; the operator unarchives it before resetting its sale.
	ErrArchived = errors.New("the screening is archived")
	// ErrNotEnoughSeats: a best-available request for a number of seats found too few free.
	ErrNotEnoughSeats = errors.New("not enough seats free")

	// ErrBadOrderCode: the text cannot be an order code.
	ErrBadOrderCode = errors.New("malformed order code")
	// ErrOrderNotFound: no order has that code.
	ErrOrderNotFound = errors.New("no such order")
	// ErrHoldExpired: the order's hold lapsed before it was confirmed (its seats may have been sold again).
	ErrHoldExpired = errors.New("the hold expired")
	// ErrOrderCancelled: the order was cancelled.
	ErrOrderCancelled = errors.New("the order was cancelled")
	// ErrOrderConfirmed: the order is confirmed; only the operator may cancel it (a refund).
	ErrOrderConfirmed = errors.New("the order is confirmed")
)

// InvalidError refuses what a caller sent: Kind is ErrBadRequest (a reservation's seat list) or
// ErrBadScreening (a screening to create, its seats or its admission settings), and Message says what is
// wrong, in words for the person who sent it. errors.Is(err, Kind) holds.
type InvalidError struct {
	Kind    error
	Message string
}

func (e *InvalidError) Error() string { return "booking: " + e.Message }

// Is makes errors.Is(err, e.Kind) hold.
func (e *InvalidError) Is(target error) bool { return target == e.Kind }

// badRequest refuses a reservation's seat list. Its words start with the kind ("bad request: no seats
// requested"), as they always have.
func badRequest(format string, args ...any) error {
	return &InvalidError{Kind: ErrBadRequest, Message: ErrBadRequest.Error() + ": " + fmt.Sprintf(format, args...)}
}

// badScreening refuses a screening to create, its seats or its admission settings.
func badScreening(format string, args ...any) error {
	return &InvalidError{Kind: ErrBadScreening, Message: fmt.Sprintf(format, args...)}
}

// TakenError names the seats that were already sold.
type TakenError struct {
	Seats []string
	// byConstraint: the UNIQUE constraint refused a write of Seats together, so which of them is sold is
	// not known yet.
	byConstraint bool
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("booking: %s: %s", ErrSeatTaken, strings.Join(e.Seats, ", "))
}

// Is makes errors.Is(err, ErrSeatTaken) hold.
func (e *TakenError) Is(target error) bool { return target == ErrSeatTaken }

// LockedError names the seat whose lock could not be taken in time.
type LockedError struct{ Seat string }

func (e *LockedError) Error() string { return fmt.Sprintf("booking: %s: %s", ErrSeatLocked, e.Seat) }

// Is makes errors.Is(err, ErrSeatLocked) hold.
func (e *LockedError) Is(target error) bool { return target == ErrSeatLocked }

// NotEnoughError refuses a request for Count seats by count that are not free: Held of the screening's seats
// are only held by orders being paid for, and may come back.
type NotEnoughError struct{ Count, Held int }

func (e *NotEnoughError) Error() string {
	return fmt.Sprintf("booking: %s: %d asked, %d seats only held", ErrNotEnoughSeats, e.Count, e.Held)
}

// Is makes errors.Is(err, ErrNotEnoughSeats) hold.
func (e *NotEnoughError) Is(target error) bool { return target == ErrNotEnoughSeats }

// AfterCommitError reports a failure after the reservation was committed: the seats are booked; freeing the
// slot or closing the line did not happen and will by time (active_ttl) or by the next reservation.
type AfterCommitError struct{ Err error }

func (e *AfterCommitError) Error() string {
	return "booking: reserved, but afterwards: " + e.Err.Error()
}

func (e *AfterCommitError) Unwrap() error { return e.Err }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
