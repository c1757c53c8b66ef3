// Package booking owns screenings, seats and reservations in SQL, and the seat locks in Redis that keep
// contention out of the database.
//
// Guarantees: a reservation needs a valid, unspent pass of an admission still holding its slot; all seats of
// a request are locked at once or none; losers of a lock never reach SQL; the write is one transaction; and
// the partial unique index on a screening's live seats makes a double booking impossible even if a lock
// lease runs out. A reservation is an order: held while its buyer pays (hold mode), or confirmed; every
// transition of it is one transaction, and a seat is in at most one held or confirmed order.
//
// Where things are:
//   - booking.go: the service (Booking, New), its settings and what it needs of the queue.
//   - errors.go: the errors it returns.
//   - reserve.go: a reservation, from pass and seats to commit and what follows it.
//   - idempotency.go: a retry under the same Idempotency-Key answered with the first reservation.
//   - best.go, pick.go: a reservation by count: the best free seats together, picked and locked.
//   - locks.go: a request's seat locks (seatLocks), taken in Redis through the queue (SeatKeeper: booking
//     builds no Redis key and holds no Redis client), and the wait for another request holding them.
//   - local.go: what the requests of one instance share: the seats known sold, the locks held here.
//   - catalog.go: a screening's seats and sale time, in memory once loaded.
//   - seats.go: seat ids under one grammar, a request's seat list, listed and grid catalogs.
//   - seatmap.go: the seat map during a sale, without SQL: available, held, sold.
//   - orders.go: orders, their statuses and codes, read by code or by screening.
//   - transitions.go: an order confirmed, cancelled or expired: the transitions as data, each made once,
//     and what follows its commit.
//   - sweeper.go: the holds that lapse, expired once cluster-wide.
//   - reconcile.go: the seat sets in Redis brought back to SQL after a transition's follow-up failed.
//   - news.go: the seat changes, gathered and published to every instance's admitted sockets.
//   - store.go, store_read.go, store_write.go, store_orders.go: the SQL side, its reads, a reservation's
//     write, an order's transitions and the lapsed holds. Each order transition and a screening's sold_out
//     and reopened write their webhook into webhook's outbox (webhook.Enqueue), a transition's in its
//     transaction.
//   - screenings.go: creating and managing screenings, and the scheduler's list of sales.
//   - reset.go: a sale reset and a screening archived, by the operator.
//   - gate.go: what the gate keeps of a screening: its gate mode, the fields it reads per room.
//   - metrics.go: the order transitions counted by outcome, and the holds the sweeper expired.
//   - db.go: opening the database and migrating it (migrations/postgres, migrations/sqlite).
//   - warm.go: keeping the connection pool warm for a burst.
//   - entry.go: what a socket must bring to take a place: the screening's proof-of-work cost, its rules.
//   - codes.go: a screening's access codes: one-time and shared, required or not, claimed by the token that
//     takes a place.
package booking

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/waitroom/waitroom/ids"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// Admissions is what booking needs of the queue: who may reserve, and what a reservation ends.
type Admissions interface {
	// CheckPassLine checks the pass (CheckPass) and tells, from the same round trip, the state of the line:
	// closed, and its count of released seats.
	CheckPassLine(ctx context.Context, c pass.Claims) (queue.LineState, error)
	// FinishSeats spends the pass of an order that took seats (a waitlist's offer gives back those it did
	// not take) and frees its slot.
	FinishSeats(ctx context.Context, c pass.Claims, seats int) error
	// SellOut closes the line of a screening sold out (kept as its waitlist when waitlist), and returns the
	// closing's epoch.
	SellOut(ctx context.Context, screening string, waitlist bool) (int64, error)
	// KeepOrderSlot spends the pass of a held order of seats and keeps its slot, the order slot, until the
	// hold lapses; FreeOrderSlot frees it when the order ends.
	KeepOrderSlot(ctx context.Context, c pass.Claims, until time.Time, seats int) error
	FreeOrderSlot(ctx context.Context, screening, token string, until time.Time) error
	// AllHeld tells the line every seat is held or sold (from then on a waitlist, when waitlist); Reopen
	// that seats came back.
	AllHeld(ctx context.Context, screening string, waitlist bool) error
	Reopen(ctx context.Context, screening string, mayReopen bool, seats, available int) (int64, error)
	// PublishSeats tells every instance's admitted sockets that seats changed state.
	PublishSeats(ctx context.Context, screening string, seats []queue.SeatChange) error
	// Reset empties the screening's line and its keys in Redis, running between once the line is closed.
	Reset(ctx context.Context, screening string, between func(context.Context) error) (int64, error)
}

// SeatKeeper is what booking needs of Redis for seats, under the queue's keys (queue/seats.go, whose
// scripts' headers say what each key and argument is): a request's seat locks, the sold and held sets of a
// screening, and the sweeper's lease. Each method is one script or one pipeline.
type SeatKeeper interface {
	SeatKeys(screening string, seats []string) queue.SeatKeys
	SeatLockPrefix(screening string) string
	LockSeats(ctx context.Context, k queue.SeatKeys, args []any) (queue.SeatLock, error)
	SeatLocksHeld(ctx context.Context, k queue.SeatKeys, owner string) (bool, error)
	UnlockSeats(ctx context.Context, k queue.SeatKeys, args []any) error
	SeatSets(ctx context.Context, screening string) (sold, held []string, err error)
	SoldSeats(ctx context.Context, screening string) ([]string, error)
	FillSeatSets(ctx context.Context, screening string, sold, held []any) error
	FixSeatSets(ctx context.Context, screening string, fix queue.SeatSetFix) error
	ChangeSeats(ctx context.Context, screening string, args ...any) error
	RenewLease(ctx context.Context, name, owner string, lease time.Duration) (bool, error)
}

// PassVerifier checks a pass's signature, expiry and screening.
type PassVerifier interface {
	Verify(pass, screening string) (pass.Claims, error)
}

// Settings bounds a reservation.
type Settings struct {
	LockWait  time.Duration
	LockLease time.Duration
	MaxSeats  int
	// DBTimeout bounds a reservation's database statements before its commit (0: none), so a slow database
	// fails the request closed (503) instead of holding it and a pooled connection for as long as it is slow.
	DBTimeout time.Duration
	// Checkout is the server's checkout mode (CheckoutInstant or CheckoutHold; empty: instant), for the
	// screenings without one of their own; HoldTTL how long a held order keeps its seats.
	Checkout string
	HoldTTL  time.Duration
	// Webhooks: write every order transition to the webhooks' outbox (webhooks.url is set).
	Webhooks bool
	// Waitlist: a screening without a setting of its own keeps its line as a waitlist when it sells out
	// (booking.waitlist; docs/protocol.md 5.4).
	Waitlist bool
}

// Booking reserves seats.
type Booking struct {
	store      *Store
	seats      SeatKeeper
	admissions Admissions
	passes     PassVerifier
	settings   Settings

	mu       sync.Mutex
	catalogs map[string]*catalog // seats never change once created
	loading  singleflight.Group  // one SQL load per screening however many requests miss at once
	released releases            // wakes this instance's waiters when a seat lock here is released
	sold     soldSeats           // the seats this instance knows are sold: a sale is never undone
	taken    takenViews          // the sold sets best-available requests share (best.go)
	instance string              // starts every lock owner id of this process, so a waiter knows a local holder
	metrics  *Metrics            // nil: nothing counted (SetMetrics)
	news     seatNews            // the seat changes on their way to the admitted sockets (news.go)

	// Tests only: afterFence runs inside the transaction after the fence is written (to pause a holder
	// past its lease); noHeldCheck skips the check before commit (so a lapsed holder reaches the fence and
	// the UNIQUE constraint, the guards behind it); seatWait is told each time a request (its owner id)
	// starts to wait for a seat another request here has locked; bestPick is told every pick of a
	// request by count; viewClock, when set, tells the age of the shared sold-set views (best.go).
	afterFence  func()
	noHeldCheck bool
	seatWait    func(owner, seat string)
	bestPick    func(seats []string)
	viewClock   func() time.Time
}

// New returns the reservation service over store, with seat locks and sets in Redis kept by seats.
func New(store *Store, seats SeatKeeper, a Admissions, p PassVerifier, s Settings) *Booking {
	store.waitlistDefault = s.Waitlist
	return &Booking{store: store, seats: seats, admissions: a, passes: p, settings: s,
		catalogs: map[string]*catalog{}, instance: ids.New()[:12]}
}

// Waitlist reports whether the screening keeps its line as a waitlist when it sells out.
func (b *Booking) Waitlist(ctx context.Context, screening string) (bool, error) {
	return b.store.waitlist(ctx, screening, b.settings.Waitlist)
}

// MaxSeats is the most seats one reservation may take.
func (b *Booking) MaxSeats() int { return b.settings.MaxSeats }

// Checkout is the server's checkout mode, which a screening without one of its own sells in.
func (b *Booking) Checkout() string {
	if b.settings.Checkout == CheckoutHold {
		return CheckoutHold
	}
	return CheckoutInstant
}
