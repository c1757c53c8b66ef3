// What one user's visit leaves behind: how it ended and what it measured on the way (connect and queue times,
// reservation round trips, the positions and waiting windows the push report checks). The report sums these,
// and a child process sends them to its parent.

package swarm

import "time"

// Outcome is how a virtual user's visit ended.
type Outcome string

// The outcomes.
const (
	// Ticket: a reservation was created (201), and in hold checkout confirmed and not refunded.
	Ticket Outcome = "ticket"
	// Refunded (hold checkout): the order was confirmed, then cancelled by the operator.
	Refunded Outcome = "refunded"
	// Lapsed (hold checkout): the user paid, but its hold had lapsed (409 HOLD_EXPIRED).
	Lapsed Outcome = "lapsed"
	// Unpaid (hold checkout): the user never paid, and left its hold to lapse.
	Unpaid Outcome = "unpaid"
	// SoldOut: the server said sold_out, on the socket or as 409 SOLD_OUT, or no seat was left to pick.
	SoldOut Outcome = "sold_out"
	// GaveUp: every try met 409 SEAT_TAKEN or SEAT_LOCKED, and seats were still left (with none left, the
	// user ends SoldOut).
	GaveUp Outcome = "gave_up"
	// Held (line mode): still connected and waiting in line when the hold ended.
	Held Outcome = "held"
	// Admitted (line mode): admitted, and still connected when the hold ended (it does not reserve).
	Admitted Outcome = "admitted"
	// Error: anything else; result.ErrKind says what.
	Error Outcome = "error"
)

// result is one user's visit. Its fields are exported for gob: a child process sends the results of its
// users to the parent, which summarizes them as its own.
type result struct {
	Outcome Outcome
	// ErrKind groups errors for counting ("read", "closed 1011", "server UNAVAILABLE", "reserve 401
	// INVALID_PASS", "timeout", ...); ErrText is the full error of this user.
	ErrKind, ErrText string
	// Connect is from the first dial to the first message; Connected says it was measured.
	Connect   time.Duration
	Connected bool
	// InQueue is from the first message to admitted; WasAdmitted says it was measured.
	InQueue     time.Duration
	WasAdmitted bool
	// Reservations holds the round trip of each POST.
	Reservations []time.Duration
	// Seats are the seats of the ticket (or of the held order).
	Seats []string
	// Code is the order's code (hold checkout: the order the user held; "" without one).
	Code string
	// Paid: the user sent its confirm; Confirmed: the confirm answered 200. HoldToConfirm is from the
	// hold's 201 to the confirm's 200 (the pay delay included), ConfirmCall the confirm's round trip.
	Paid, Confirmed            bool
	HoldToConfirm, ConfirmCall time.Duration
	// HeldWaits counts the seat-map reads again after finding no seat available but some held.
	HeldWaits int
	// Waitlisted: it was told sold_out and stayed on the waitlist; Offered: it was offered seats there.
	Waitlisted, Offered bool
	// SoldOutAnswers counts the 409 SOLD_OUT answers of hold checkout, after which the seat map decides.
	SoldOutAnswers int
	// heldAt is when the hold's 201 arrived (this process only: gob leaves it out).
	heldAt     time.Time
	Reconnects int
	// Busy counts its dials refused BUSY.
	Busy int
	// FirstDialAt is when the user first dialed; RegisteredAt when it got its first queued (or prequeue)
	// message (zero if it never did). Wall-clock times: the processes of a run share the machine's clock.
	FirstDialAt, RegisteredAt time.Time
	// FirstChallengeAt is when the user first asked for a challenge (zero: it never solved).
	FirstChallengeAt time.Time
	// Solves are the user's solves, from challenge fetched to solution; SolveWaits their waits for a core
	// before the fetch; ChallengeFailures the fetches that failed.
	Solves, SolveWaits []time.Duration
	ChallengeFailures  int
	// Positions are the position messages the user received, in order.
	Positions []position
	// Windows are the stretches in which the user was connected and waiting: one per connection that got
	// queued, from that message to admitted or the connection's end.
	Windows []window
}

func (r *result) fail(kind string, err error) {
	r.Outcome, r.ErrKind, r.ErrText = Error, kind, err.Error()
}

// position is one position message as received.
type position struct {
	// TickAtMs is the message's tick_at (Unix ms); Latency is from then to the message's receipt.
	TickAtMs int64
	Latency  time.Duration
	// AfterQueued says the message came right after queued on its connection: it may be the catch-up of
	// the connect (docs/protocol.md 4.2), not a tick's push.
	AfterQueued bool
	// CatchUp: the server marked it as a connect's catch-up (catch_up): it is not a tick's, wherever it
	// came. A server that does not mark them leaves the swarm to tell them by AfterQueued.
	CatchUp bool
}

// window is a stretch in which a user was connected and waiting in line.
type window struct {
	// From is when queued arrived; To when admitted arrived (Admitted true) or the connection ended.
	From, To time.Time
	Admitted bool
}
