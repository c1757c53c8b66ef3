// The seats of a screening in Redis, under the queue's keys, for booking: a request's seat locks, taken all
// at once or none (lua/seatlock.lua), checked before commit (lua/seatheld.lua) and released after
// (lua/seatunlock.lua); the sold and held sets, read, filled from SQL, corrected, and moved by an order's
// transition (lua/seats.lua). Each call is the one script or pipeline booking ran itself before: this file
// owns the keys, booking decides what to do with them.

package queue

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/seatlock.lua
	seatLockLua string
	//go:embed lua/seatunlock.lua
	seatUnlockLua string
	//go:embed lua/seatheld.lua
	seatHeldLua string
	//go:embed lua/seats.lua
	seatsLua string

	seatLockScript   = redis.NewScript(seatLockLua)
	seatUnlockScript = redis.NewScript(seatUnlockLua)
	seatHeldScript   = redis.NewScript(seatHeldLua)
	seatsScript      = redis.NewScript(seatsLua)
)

// SeatKeys are the keys of one request's seat locks in a screening, built once for all its tries: what
// seatlock.lua takes (the line's closed key, the screening's sold set, then one lock key per seat).
type SeatKeys struct {
	screening string
	keys      []string
}

// SeatKeys returns the keys of the locks of seats (sorted, as the request asks for them) of screening.
func (q *Queue) SeatKeys(screening string, seats []string) SeatKeys {
	keys := make([]string, 0, len(seats)+2)
	keys = append(keys, ClosedKey(q.prefix, screening), Key(q.prefix, screening, "sold"))
	for _, s := range seats {
		keys = append(keys, Key(q.prefix, screening, "seat:"+s))
	}
	return SeatKeys{screening: screening, keys: keys}
}

// Locks are the lock keys of the seats, in the order of the seats: what an instance names its own
// requests' locks by.
func (k SeatKeys) Locks() []string { return k.keys[2:] }

// SeatLockPrefix starts every seat lock key of the screening.
func (q *Queue) SeatLockPrefix(screening string) string { return Key(q.prefix, screening, "seat:") }

// What seatlock.lua answers (SeatLock.Outcome).
const (
	SeatsLocked  = 1  // every lock taken
	SeatsTaken   = -1 // some of the seats are sold (SeatLock.Taken)
	SeatsSoldOut = -2 // the screening is sold out
	SeatHeld     = 0  // a seat is locked by another request (SeatLock.Seat, SeatLock.Owner)
)

// SeatLock is the answer of one run of seatlock.lua.
type SeatLock struct {
	Outcome     int64
	Taken       []string // SeatsTaken: every requested seat that is sold
	Seat, Owner string   // SeatHeld: a seat that is locked, and the owner id holding it
}

// LockSeats runs seatlock.lua once over k, taking every lock or none; args are its ARGV: the owner id, the
// lease in ms, then the seat ids (in the order k was built with).
func (q *Queue) LockSeats(ctx context.Context, k SeatKeys, args []any) (SeatLock, error) {
	res, err := seatLockScript.Run(ctx, q.rdb, k.keys, args...).Slice()
	if err != nil {
		return SeatLock{}, err
	}
	switch res[0].(int64) {
	case SeatsLocked:
		return SeatLock{Outcome: SeatsLocked}, nil
	case SeatsTaken:
		taken := make([]string, 0, len(res)-1)
		for _, s := range res[1:] {
			taken = append(taken, s.(string))
		}
		return SeatLock{Outcome: SeatsTaken, Taken: taken}, nil
	case SeatsSoldOut:
		return SeatLock{Outcome: SeatsSoldOut}, nil
	}
	owner, _ := res[2].(string)
	return SeatLock{Outcome: SeatHeld, Seat: res[1].(string), Owner: owner}, nil
}

// SeatLocksHeld reports whether owner still holds every lock of k (seatheld.lua).
func (q *Queue) SeatLocksHeld(ctx context.Context, k SeatKeys, owner string) (bool, error) {
	n, err := seatHeldScript.Run(ctx, q.rdb, k.Locks(), owner).Int()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// UnlockSeats runs seatunlock.lua over k: it releases the locks owner still holds, after adding seats to
// the sold set (and to the held set too when held: the seats of the request's own held order). args are
// its ARGV: the owner id, "1" or "0" for held, then the seats.
func (q *Queue) UnlockSeats(ctx context.Context, k SeatKeys, args []any) error {
	keys := make([]string, 0, len(k.keys)+1)
	keys = append(keys, k.keys[1], Key(q.prefix, k.screening, "held"))
	keys = append(keys, k.Locks()...)
	return seatUnlockScript.Run(ctx, q.rdb, keys, args...).Err()
}

// SeatSets reads the screening's sold set (every seat not available) and held set (those only held) in
// one round trip. Its error is Redis's, for the caller to wrap.
func (q *Queue) SeatSets(ctx context.Context, screening string) (sold, held []string, err error) {
	pipe := q.rdb.Pipeline()
	soldCmd, heldCmd := pipe.SMembers(ctx, Key(q.prefix, screening, "sold")), pipe.SMembers(ctx, Key(q.prefix, screening, "held"))
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, err
	}
	return soldCmd.Val(), heldCmd.Val(), nil
}

// SoldSeats reads the screening's sold set alone. Its error is Redis's.
func (q *Queue) SoldSeats(ctx context.Context, screening string) ([]string, error) {
	return q.rdb.SMembers(ctx, Key(q.prefix, screening, "sold")).Result()
}

// FillSeatSets adds sold to the screening's sold set and held (when any) to its held set, in one round
// trip: the sets loaded from SQL. Its error is Redis's.
func (q *Queue) FillSeatSets(ctx context.Context, screening string, sold, held []any) error {
	pipe := q.rdb.Pipeline()
	if len(held) > 0 {
		pipe.SAdd(ctx, Key(q.prefix, screening, "held"), held...)
	}
	pipe.SAdd(ctx, Key(q.prefix, screening, "sold"), sold...)
	_, err := pipe.Exec(ctx)
	return err
}

// SeatSetFix is what the sold and held sets of a screening lack (Add) and have too many of (Remove).
type SeatSetFix struct{ SoldAdd, SoldRemove, HeldAdd, HeldRemove []any }

// FixSeatSets applies fix in one transaction; one that removes a seat moves the screening's released count
// too, so every instance forgets what it remembered sold. Its error is Redis's.
func (q *Queue) FixSeatSets(ctx context.Context, screening string, fix SeatSetFix) error {
	soldKey, heldKey := Key(q.prefix, screening, "sold"), Key(q.prefix, screening, "held")
	pipe := q.rdb.TxPipeline()
	fixSet(ctx, pipe, soldKey, fix.SoldAdd, fix.SoldRemove)
	fixSet(ctx, pipe, heldKey, fix.HeldAdd, fix.HeldRemove)
	if len(fix.SoldRemove) > 0 || len(fix.HeldRemove) > 0 {
		pipe.Incr(ctx, ReleasedKey(q.prefix, screening))
	}
	_, err := pipe.Exec(ctx)
	return err
}

// fixSet queues the fix of the set at key on pipe.
func fixSet(ctx context.Context, pipe redis.Pipeliner, key string, add, remove []any) {
	if len(add) > 0 {
		pipe.SAdd(ctx, key, add...)
	}
	if len(remove) > 0 {
		pipe.SRem(ctx, key, remove...)
	}
}

// ChangeSeats runs seats.lua: an order's seats changed state after its transaction committed. args are its
// ARGV: "confirm" (held seats are sold now) or "release" (they are available again), then the seat ids. Its
// error is Redis's.
func (q *Queue) ChangeSeats(ctx context.Context, screening string, args ...any) error {
	keys := []string{Key(q.prefix, screening, "sold"), Key(q.prefix, screening, "held"), ReleasedKey(q.prefix, screening)}
	return seatsScript.Run(ctx, q.rdb, keys, args...).Err()
}
