// Test-only hooks into booking's internals, for the tests outside the package (booking_test).

package booking

import (
	"crypto/sha1"
	"fmt"
	"os"
	"time"
)

// SetAfterFence makes every reservation of b call fn inside its transaction right after the fence is
// written: a test pauses there so the holder's lease runs out mid-transaction.
func SetAfterFence(b *Booking, fn func()) { b.afterFence = fn }

// SkipHeldCheck makes b commit without checking that it still holds its seat locks, so a holder whose
// lease lapsed reaches the fence and the UNIQUE constraint: the guards a test of them needs to reach.
func SkipHeldCheck(b *Booking) { b.noHeldCheck = true }

// SetSeatWait makes b call fn each time a request (owner, its lock owner id) starts to wait for a seat
// another request of b has locked.
func SetSeatWait(b *Booking, fn func(owner, seat string)) { b.seatWait = fn }

// SetBestPick makes b call fn with the seats of every pick a request by count makes.
func SetBestPick(b *Booking, fn func(seats []string)) { b.bestPick = fn }

// SetViewClock makes b tell the age of its shared views of the sold sets by now.
func SetViewClock(b *Booking, now func() time.Time) { b.viewClock = now }

// LockScriptHash is the SHA1 of the seat-lock script (the queue's, lua/seatlock.lua), as EVALSHA names it.
var LockScriptHash = func() string {
	src, err := os.ReadFile("../queue/lua/seatlock.lua")
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%x", sha1.Sum(src))
}()

// SetClock makes s read the time from now: when an order is made, hence when its hold lapses, and when a
// transition moves it. A test advances it instead of sleeping for a hold to lapse.
func SetClock(s *Store, now func() time.Time) { s.now = now }
