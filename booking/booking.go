// Package booking owns screenings, seats and reservations in SQL, and the seat locks in Redis that keep
// contention out of the database.
//
// Guarantees: a reservation needs a valid, unspent pass of an admission still holding its slot; all seats of
// a request are locked at once or none; losers of a lock never reach SQL; the write is one transaction; and
// the UNIQUE (screening, seat) constraint makes a double booking impossible even if a lock lease runs out.
package booking

import (
	"context"
	"crypto/sha256"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/waitroom/waitroom/queue"
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
	// ErrBadRequest: the seat list is empty, too long, repeats a seat, or names a seat that does not exist.
	ErrBadRequest = errors.New("bad request")
	// ErrLockLost: the request's seat locks lapsed before it could commit (a newer holder took them); it
	// booked nothing.
	ErrLockLost = errors.New("seat hold expired before the reservation committed")
	// ErrIdempotencyMismatch: an Idempotency-Key already reserved other seats.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with another request")
	// ErrScreeningExists: a screening with that id exists already.
	ErrScreeningExists = errors.New("screening exists")
	// ErrBadScreening: a screening to create is malformed (its id, times, seats or admission settings).
	ErrBadScreening = errors.New("bad screening")
)

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

// Admissions is what booking needs of the queue: who may reserve, and what a reservation ends.
type Admissions interface {
	// CheckPassLine checks the pass (CheckPass) and tells, from the same round trip, whether the line is
	// closed.
	CheckPassLine(ctx context.Context, c queue.Claims) (closed bool, err error)
	Finish(ctx context.Context, c queue.Claims) error
	Close(ctx context.Context, screening string) error
}

// PassVerifier checks a pass's signature, expiry and screening.
type PassVerifier interface {
	Verify(pass, screening string) (queue.Claims, error)
}

// Settings bounds a reservation.
type Settings struct {
	LockWait  time.Duration
	LockLease time.Duration
	MaxSeats  int
	// DBTimeout bounds a reservation's database statements before its commit (0: none), so a slow database
	// fails the request closed (503) instead of holding it and a pooled connection for as long as it is slow.
	DBTimeout time.Duration
}

var (
	//go:embed lua/lock.lua
	lockLua string
	//go:embed lua/unlock.lua
	unlockLua string
	//go:embed lua/held.lua
	heldLua      string
	lockScript   = redis.NewScript(lockLua)
	unlockScript = redis.NewScript(unlockLua)
	holdScript   = redis.NewScript(heldLua)

	seatRe = regexp.MustCompile(`^[A-Z]{1,3}[0-9]{1,4}$`)
)

// The pause between two tries for a held seat lock starts at lockRetryFirst and doubles up to lockRetryCap,
// each one jittered over its upper half: a crowd waiting on one seat retries a few times, not in step, and
// does not flood Redis while the holder commits.
const (
	lockRetryFirst = 16 * time.Millisecond
	lockRetryCap   = 64 * time.Millisecond
	// localHolderCheck is how long a waiter for a holder in this process sleeps if no release wakes it.
	localHolderCheck = 250 * time.Millisecond
)

// Booking reserves seats.
type Booking struct {
	store      *Store
	rdb        redis.UniversalClient
	prefix     string
	admissions Admissions
	passes     PassVerifier
	settings   Settings

	mu       sync.Mutex
	catalogs map[string]*catalog // seats never change once created
	loading  singleflight.Group  // one SQL load per screening however many requests miss at once
	released releases            // wakes this instance's waiters when a seat lock here is released
	sold     soldSeats           // the seats this instance knows are sold: a sale is never undone
	instance string              // starts every lock owner id of this process, so a waiter knows a local holder

	// Tests only: afterFence runs inside the transaction after the fence is written (to pause a holder
	// past its lease); noHeldCheck skips the check before commit (so a lapsed holder reaches the fence and
	// the UNIQUE constraint, the guards behind it).
	afterFence  func()
	noHeldCheck bool
}

// New returns the reservation service over store, with seat locks in rdb under prefix.
func New(store *Store, rdb redis.UniversalClient, prefix string, a Admissions, p PassVerifier, s Settings) *Booking {
	return &Booking{store: store, rdb: rdb, prefix: prefix, admissions: a, passes: p, settings: s,
		catalogs: map[string]*catalog{}, instance: queue.NewToken()[:12]}
}

// ParseSeats checks a requested seat list against a screening's catalog: 1..max seats, each once, each
// existing. It returns the ids sorted, the canonical order of a request.
func (b *Booking) ParseSeats(ctx context.Context, screening string, seats []string) ([]string, error) {
	if len(seats) == 0 {
		return nil, fmt.Errorf("booking: %w: no seats requested", ErrBadRequest)
	}
	if len(seats) > b.settings.MaxSeats {
		return nil, fmt.Errorf("booking: %w: %d seats requested, at most %d per reservation", ErrBadRequest, len(seats), b.settings.MaxSeats)
	}
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seats))
	for _, s := range seats {
		if !seatRe.MatchString(s) || !cat.ids[s] {
			return nil, fmt.Errorf("booking: %w: no seat %q in %s", ErrBadRequest, truncate(s, 16), screening)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	if i := firstRepeat(out); i >= 0 {
		return nil, fmt.Errorf("booking: %w: seat %s requested twice", ErrBadRequest, out[i])
	}
	return out, nil
}

func firstRepeat(sorted []string) int {
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return i
		}
	}
	return -1
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (b *Booking) catalog(ctx context.Context, screening string) (*catalog, error) {
	b.mu.Lock()
	cat, ok := b.catalogs[screening]
	b.mu.Unlock()
	if ok {
		return cat, nil
	}
	v, err, _ := b.loading.Do(screening, func() (any, error) {
		cat, err := b.store.catalog(ctx, screening)
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.catalogs[screening] = cat
		b.mu.Unlock()
		return cat, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*catalog), nil
}

// Reserve books seats of screening for the holder of pass, without an Idempotency-Key.
func (b *Booking) Reserve(ctx context.Context, screening, pass string, seats []string) (Reservation, error) {
	return b.ReserveOnce(ctx, screening, pass, "", seats)
}

// ReserveOnce books seats of screening for the holder of pass: check the screening exists, verify the pass
// and that its admission still holds the slot; lock every seat at once (waiting up to lock_wait); write in
// one transaction, fenced; release the locks after commit; spend the pass and free the slot; close the line
// if that was the last seat.
//
// With an idempotency key, a retry of a request that reserved (same key, same screening and seats) returns
// that reservation again instead of an error, and the same key with other seats is ErrIdempotencyMismatch.
// Only reservations are remembered: a request that failed booked nothing, and its retry runs anew.
func (b *Booking) ReserveOnce(ctx context.Context, screening, pass, key string, seats []string) (Reservation, error) {
	if err := b.Exists(ctx, screening); err != nil {
		return Reservation{}, err
	}
	claims, err := b.passes.Verify(pass, screening)
	if err != nil {
		return Reservation{}, fmt.Errorf("booking: %w", err)
	}
	seats, err = b.ParseSeats(ctx, screening, seats)
	if err != nil {
		return Reservation{}, err
	}
	hash := requestHash(screening, seats)
	r, err := b.reserve(ctx, claims, key, hash, seats)
	if key != "" && err != nil && !errors.As(err, new(*AfterCommitError)) && mayBeRetry(err) {
		return b.replay(ctx, claims, key, hash, err)
	}
	return r, err
}

// mayBeRetry tells the errors a retry of a request that already reserved runs into: its pass is spent, its
// seats are sold (or held by the first attempt still finishing), or the screening sold out.
func mayBeRetry(err error) bool {
	return errors.Is(err, queue.ErrPassSpent) || errors.Is(err, queue.ErrNotActive) ||
		errors.Is(err, ErrSeatTaken) || errors.Is(err, ErrSeatLocked) || errors.Is(err, ErrSoldOut)
}

// replay answers a retry: the reservation this pass made under key, or the original error if there is none.
func (b *Booking) replay(ctx context.Context, claims queue.Claims, key, hash string, original error) (Reservation, error) {
	prev, prevKey, prevHash, err := b.store.byPass(ctx, claims.ID)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && prevKey != key):
		return Reservation{}, original
	case err != nil:
		return Reservation{}, errors.Join(original, fmt.Errorf("booking: idempotency lookup: %w", err))
	case prevHash != hash:
		return Reservation{}, fmt.Errorf("booking: key %q was used for other seats: %w", truncate(key, 32), ErrIdempotencyMismatch)
	}
	return prev, nil
}

// requestHash names what a request asked for, to tell a retry from another request under the same key.
func requestHash(screening string, sortedSeats []string) string {
	sum := sha256.Sum256([]byte(screening + "\x00" + strings.Join(sortedSeats, ",")))
	return hex.EncodeToString(sum[:])
}

func (b *Booking) reserve(ctx context.Context, claims queue.Claims, key, hash string, seats []string) (Reservation, error) {
	screening := claims.Screening
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return Reservation{}, err
	}
	lockKeys := make([]string, 0, len(seats)+2)
	lockKeys = append(lockKeys, queue.ClosedKey(b.prefix, screening), queue.Key(b.prefix, screening, "sold"))
	for _, s := range seats {
		lockKeys = append(lockKeys, queue.Key(b.prefix, screening, "seat:"+s))
	}
	deadline := time.Now().Add(b.settings.LockWait)
	owner := b.instance + "/" + queue.NewToken()
	// A seat another request here holds is waited for here, before any Redis call: the losers of a burst on
	// a few seats wait without a lock script each, and check their pass once the winner has committed.
	if err := b.awaitHolders(ctx, screening, len(cat.seats), lockKeys[2:], seats, owner, deadline); err != nil {
		return Reservation{}, err
	}
	locked := false
	var sold []string // seats this request learnt are sold: the unlock adds them to Redis's sold set
	unlock := func() {
		// After commit or rollback; with a context of its own so a cancelled request still releases.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		args := make([]any, 0, len(sold)+1)
		args = append(args, owner)
		for _, s := range sold {
			args = append(args, s)
		}
		// The sold set is a hint for the lock script (SQL stays the guard), so a failure here is not the
		// request's: the locks then lapse by their lease.
		_ = unlockScript.Run(ctx, b.rdb, lockKeys[1:], args...).Err()
		b.released.release(lockKeys[2:], owner)
		locked = false
	}
	defer func() {
		if locked {
			unlock()
		}
	}()
	closed, err := b.admissions.CheckPassLine(ctx, claims)
	if err != nil {
		return Reservation{}, fmt.Errorf("booking: %w", err)
	}
	if closed {
		b.sold.close(screening) // for good: the memo below answers SOLD_OUT, as the lock script would
	}
	// A seat this instance saw sold is refused with no lock (a spent pass was told so first, above; and a
	// closed line was just read with the pass).
	if err := b.sold.refuse(screening, seats, len(cat.seats)); err != nil {
		return Reservation{}, err
	}
	if err := b.lock(ctx, screening, len(cat.seats), lockKeys, owner, seats, deadline); err != nil {
		return Reservation{}, err
	}
	locked = true

	r, err := b.store.insert(ctx, write{
		screening: screening, holder: claims.Token, passID: claims.ID, seats: seats, total: len(cat.seats),
		idempotencyKey: key, hash: hash, afterFence: b.afterFence, timeout: b.settings.DBTimeout,
		committed: func() {
			// The seats are sold: the requests here waiting for them learn it now and are refused at once,
			// not after this request's count, Redis updates and unlock (they find the seats in the memo).
			b.sold.add(screening, seats)
			b.released.wake(lockKeys[2:])
		},
		stillHeld: func(ctx context.Context) (bool, error) {
			if b.noHeldCheck {
				return true, nil
			}
			n, err := holdScript.Run(ctx, b.rdb, lockKeys[2:], owner).Int()
			return n == 1, err
		},
	})
	var after []error
	var committed *AfterCommitError
	if errors.As(err, &committed) {
		after, err = append(after, committed.Err), nil
	}
	var taken *TakenError
	if errors.As(err, &taken) {
		// Redis learns what SQL knew (with the unlock), so the next request for these seats is refused
		// before any lock.
		b.sold.add(screening, taken.Seats)
		sold = taken.Seats
	}
	if errors.Is(err, ErrSoldOut) {
		b.sold.close(screening)
		if cerr := b.admissions.Close(ctx, screening); cerr != nil {
			return Reservation{}, errors.Join(err, cerr)
		}
	}
	if err != nil {
		return Reservation{}, err
	}
	// The reservation is committed: what follows cannot undo it. Freeing the slot (a failure leaves it to
	// expire by time) and releasing the locks with the seats marked sold go to Redis side by side: the
	// winner waits one round trip for both, not two.
	sold = r.Seats
	finished := make(chan error, 1)
	go func() { finished <- b.admissions.Finish(ctx, claims) }()
	if r.SeatsLeft == 0 {
		// The line closes before the locks go, so a request that waited for them is told SOLD_OUT.
		b.sold.close(screening)
		if err := b.admissions.Close(ctx, screening); err != nil {
			after = append(after, err)
		}
	}
	unlock()
	if err := <-finished; err != nil {
		after = append(after, err)
	}
	if err := errors.Join(after...); err != nil {
		return r, &AfterCommitError{Err: err}
	}
	return r, nil
}

// AfterCommitError reports a failure after the reservation was committed: the seats are booked; freeing the
// slot or closing the line did not happen and will by time (active_ttl) or by the next reservation.
type AfterCommitError struct{ Err error }

func (e *AfterCommitError) Error() string {
	return "booking: reserved, but afterwards: " + e.Err.Error()
}

func (e *AfterCommitError) Unwrap() error { return e.Err }

// awaitHolders waits while another request here holds one of seats (their lock keys keys), until it
// releases or commits. It returns nil when none is held here, when one is known sold (the caller refuses
// it, once it has checked the pass), or when localHolderCheck passed without a release (the holder's lease
// may have run out: Redis decides); and a LockedError once deadline has passed.
//
// (Tried and not kept: claiming the seats here before the pass check, so that one request of a crowd went
// on to Redis and the rest waited for it. The burst's p99 got worse, 1.2-1.4x the floor's to 1.6-1.7x:
// the winner was then whichever request came first, not the fastest of those racing for the lock.)
func (b *Booking) awaitHolders(ctx context.Context, screening string, total int, keys, seats []string, owner string, deadline time.Time) error {
	for {
		if b.sold.refuse(screening, seats, total) != nil {
			return nil
		}
		seat, released := b.released.heldHere(keys, seats, owner)
		if released == nil {
			return nil
		}
		if err := b.awaitRelease(ctx, seat, released, deadline); err != nil {
			return err
		}
		select {
		case <-released:
		default:
			return nil // localHolderCheck passed
		}
	}
}

// awaitRelease waits until released is closed, localHolderCheck passes, or ctx ends (an error); a
// LockedError for seat if deadline has passed.
func (b *Booking) awaitRelease(ctx context.Context, seat string, released <-chan struct{}, deadline time.Time) error {
	left := time.Until(deadline)
	if left <= 0 {
		return &LockedError{Seat: seat}
	}
	timer := time.NewTimer(min(localHolderCheck, left))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("booking: lock seats: %w", ctx.Err())
	case <-released:
	case <-timer.C:
	}
	return nil
}

// lock takes every seat lock or none, retrying with jitter until deadline (lock_wait from the request's
// start) has passed.
func (b *Booking) lock(ctx context.Context, screening string, total int, keys []string, owner string, seats []string, deadline time.Time) error {
	args := make([]any, 0, len(seats)+2)
	args = append(args, owner, b.settings.LockLease.Milliseconds())
	for _, s := range seats {
		args = append(args, s)
	}
	step := lockRetryFirst
	keyOf := make(map[string]string, len(seats))
	for i, s := range seats {
		keyOf[s] = keys[i+2]
	}
	for {
		if err := b.sold.refuse(screening, seats, total); err != nil {
			return err
		}
		// A seat another request here has or is asking Redis for: wait here for it rather than ask Redis,
		// which would only say that it is held. Claiming the seats here before the lock script means that of
		// the requests for a seat that pass their checks together, one runs the script and the rest wait
		// for its outcome, instead of a thousand scripts at once.
		seat, released := b.released.claim(keys[2:], seats, owner)
		if released != nil {
			if err := b.awaitRelease(ctx, seat, released, deadline); err != nil {
				return err
			}
			select {
			case <-released:
				continue // sold, released or refused: look again
			default:
				// The holder here outlived localHolderCheck: its lease may have run out, so Redis decides.
			}
		}
		claimed := released == nil
		unclaim := func() {
			if claimed {
				b.released.release(keys[2:], owner)
			}
		}
		res, err := lockScript.Run(ctx, b.rdb, keys, args...).Slice()
		if err != nil {
			unclaim()
			return fmt.Errorf("booking: lock seats: %w", err)
		}
		// A refusal is noted before the claim goes, so the requests it wakes find it in the memo.
		switch res[0].(int64) {
		case 1:
			b.released.hold(keys[2:], owner)
			return nil
		case -1:
			taken := make([]string, 0, len(res)-1)
			for _, s := range res[1:] {
				taken = append(taken, s.(string))
			}
			b.sold.add(screening, taken)
			unclaim()
			return &TakenError{Seats: taken}
		case -2:
			b.sold.close(screening)
			unclaim()
			return fmt.Errorf("booking: reserve: %w", ErrSoldOut)
		}
		unclaim()
		left := time.Until(deadline)
		if left <= 0 {
			return &LockedError{Seat: res[1].(string)}
		}
		// A holder in this process wakes us when it releases, so we only check in now and then (in case
		// its lease runs out first); a holder elsewhere is polled with back-off. The last pause ends at the
		// deadline, for one last try: a waiter waits all of lock_wait.
		pause := step/2 + rand.N(step/2)
		if holder, _ := res[2].(string); strings.HasPrefix(holder, b.instance+"/") {
			pause = localHolderCheck
		} else {
			step = min(2*step, lockRetryCap)
		}
		pause = min(pause, left)
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("booking: lock seats: %w", ctx.Err())
		case <-b.released.wait(keyOf[res[1].(string)]):
			timer.Stop() // released here: the seat is likely sold (marked before release), or try again now
			// (The line may have closed with that commit unknown to this instance: then SEAT_TAKEN, and the
			// client's next request reads the closing with its pass.)
			if err := b.sold.refuse(screening, seats, total); err != nil {
				return err
			}
		case <-timer.C:
		}
	}
}

// soldSeats is what this instance has learnt is sold, per screening: from its own commits, and from SQL's
// or Redis's refusals. A seat once sold stays sold (nothing cancels a reservation), so the memo is never
// stale, only incomplete; Redis and then SQL decide for any seat it does not list.
type soldSeats struct {
	mu     sync.RWMutex
	byID   map[string]map[string]bool // screening -> seat ids
	closed map[string]bool            // screenings whose line is closed (sold out or closed by the operator: for good)
}

// close records that the screening's line is closed.
func (s *soldSeats) close(screening string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed == nil {
		s.closed = map[string]bool{}
	}
	s.closed[screening] = true
}

func (s *soldSeats) add(screening string, seats []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]map[string]bool{}
	}
	m := s.byID[screening]
	if m == nil {
		m = map[string]bool{}
		s.byID[screening] = m
	}
	for _, id := range seats {
		m[id] = true
	}
}

// refuse answers a request for seats of a screening of total seats from what is known: ErrSoldOut when
// the line is known closed or every seat is known sold (as the lock script would), a TakenError naming
// those of seats known sold, or nil when none is.
func (s *soldSeats) refuse(screening string, seats []string, total int) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed[screening] {
		return fmt.Errorf("booking: reserve: %w", ErrSoldOut)
	}
	m := s.byID[screening]
	if len(m) == 0 {
		return nil
	}
	var taken []string
	for _, id := range seats {
		if m[id] {
			taken = append(taken, id)
		}
	}
	switch {
	case len(taken) == 0:
		return nil
	case len(m) >= total:
		return fmt.Errorf("booking: reserve: %w", ErrSoldOut)
	}
	return &TakenError{Seats: taken}
}

// releases knows the seat locks the requests of this instance hold, and lets a request waiting for one
// wake the moment it is released, instead of at its next poll. A holder on another instance is still found
// out by polling; a release between a failed try and the wait is too (the wait then ends by its timer).
type releases struct {
	mu      sync.Mutex
	waiting map[string]chan struct{} // seat lock key -> closed when a request here releases it
	held    map[string]string        // seat lock key -> the owner id of the request here that holds it
}

// hold records that owner, a request here, took the locks keys.
func (r *releases) hold(keys []string, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holdLocked(keys, owner)
}

func (r *releases) holdLocked(keys []string, owner string) {
	if r.held == nil {
		r.held = map[string]string{}
	}
	for _, k := range keys {
		r.held[k] = owner
	}
}

// claim records owner as the holder here of keys, all or none: if a request here other than owner has
// one of them, it returns that key's seat (seats[i] for keys[i]) and the channel its release closes, and
// claims nothing. The claim becomes the hold if the lock script then takes the locks (released after the
// commit or rollback, as a hold is), and is released at once if it does not.
func (r *releases) claim(keys, seats []string, owner string) (string, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.otherHolderLocked(keys, owner); i >= 0 {
		return seats[i], r.waitLocked(keys[i])
	}
	r.holdLocked(keys, owner)
	return "", nil
}

// heldHere returns the first of keys (and its seat, seats[i] for keys[i]) that a request here other than
// owner has, with the channel its release closes; a nil channel when none has.
func (r *releases) heldHere(keys, seats []string, owner string) (string, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.otherHolderLocked(keys, owner); i >= 0 {
		return seats[i], r.waitLocked(keys[i])
	}
	return "", nil
}

// otherHolderLocked returns the index of the first of keys that a request here other than owner has, or
// -1. r.mu is held.
func (r *releases) otherHolderLocked(keys []string, owner string) int {
	for i, k := range keys {
		if o, ok := r.held[k]; ok && o != owner {
			return i
		}
	}
	return -1
}

func (r *releases) wait(key string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waitLocked(key)
}

func (r *releases) waitLocked(key string) <-chan struct{} {
	if r.waiting == nil {
		r.waiting = map[string]chan struct{}{}
	}
	ch, ok := r.waiting[key]
	if !ok {
		ch = make(chan struct{})
		r.waiting[key] = ch
	}
	return ch
}

// wake wakes the requests waiting for keys now, though the locks are still held (they look again, and wait
// again for the release if they must).
func (r *releases) wake(keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakeLocked(keys)
}

func (r *releases) wakeLocked(keys []string) {
	for _, k := range keys {
		if ch, ok := r.waiting[k]; ok {
			close(ch)
			delete(r.waiting, k)
		}
	}
}

// release gives up owner's hold on keys and wakes who waits for them.
func (r *releases) release(keys []string, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if r.held[k] == owner {
			delete(r.held, k)
		}
	}
	r.wakeLocked(keys)
}

// MaxSeats is the most seats one reservation may take.
func (b *Booking) MaxSeats() int { return b.settings.MaxSeats }

// Exists reports ErrUnknownScreening for a screening that does not exist.
func (b *Booking) Exists(ctx context.Context, screening string) error {
	_, err := b.OpensAt(ctx, screening)
	return err
}

// OpensAt returns the screening's sale time (from memory after the first call), or ErrUnknownScreening.
func (b *Booking) OpensAt(ctx context.Context, screening string) (time.Time, error) {
	if !queue.ValidScreening(screening) {
		return time.Time{}, fmt.Errorf("booking: %q: %w", truncate(screening, 64), ErrUnknownScreening)
	}
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return time.Time{}, err
	}
	return cat.opensAt, nil
}

// soldSentinel marks a screening's sold set in Redis as loaded from SQL; it is never a seat id.
const soldSentinel = "-"

// Seats returns the seat map without touching SQL: the catalog (in memory, it never changes) and the sold
// set in Redis that every committed reservation adds to. A sold set Redis does not have (first use, or
// after a Redis restart) is loaded from SQL once and marked with a sentinel.
func (b *Booking) Seats(ctx context.Context, screening string) ([]SeatStatus, error) {
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return nil, err
	}
	key := queue.Key(b.prefix, screening, "sold")
	members, err := b.rdb.SMembers(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("booking: seat map of %s: %w", screening, err)
	}
	if !slices.Contains(members, soldSentinel) {
		fromSQL, err := b.store.Seats(ctx, screening)
		if err != nil {
			return nil, err
		}
		add := []any{soldSentinel}
		for _, s := range fromSQL {
			if s.Status == "sold" {
				add = append(add, s.ID)
				members = append(members, s.ID)
			}
		}
		if err := b.rdb.SAdd(ctx, key, add...).Err(); err != nil {
			return nil, fmt.Errorf("booking: seat map of %s: %w", screening, err)
		}
	}
	soldSet := make(map[string]bool, len(members))
	for _, m := range members {
		soldSet[m] = true
	}
	out := make([]SeatStatus, len(cat.seats))
	for i, s := range cat.seats {
		out[i] = SeatStatus{ID: s.ID, Row: s.Row, Number: s.Number, Status: "available"}
		if soldSet[s.ID] {
			out[i].Status = "sold"
		}
	}
	return out, nil
}
