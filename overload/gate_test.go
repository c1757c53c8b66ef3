// The gate's promises: the room kept for a class is its own, waiters are served first class first, a class's
// wait is bounded, and a refused or abandoned request holds nothing.

package overload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// take takes a slot for class c or fails the test.
func take(t *testing.T, g *Gate, c Class) func() {
	t.Helper()
	done, err := g.Take(With(context.Background(), c))
	if err != nil {
		t.Fatalf("Take(%s) = %v, want a slot", c, err)
	}
	return done
}

// waitFor waits until n requests of class c wait at g.
func waitFor(t *testing.T, g *Gate, c Class, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); g.Waiting(c) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("Waiting(%s) = %d, want %d", c, g.Waiting(c), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAConfirmTakesTheRoomKeptForItWhileBuyersHoldTheRest(t *testing.T) {
	g := NewGate("test", Settings{Size: 4, PaymentRoom: 1}, nil)
	take(t, g, Payment)() // payments come: their room is kept
	for range 3 {
		defer take(t, g, Buyer)()
	}
	ctx, cancel := context.WithTimeout(With(context.Background(), Buyer), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Take(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a fourth buyer's Take = %v, want it to wait past its deadline: the last slot is kept", err)
	}
	done := take(t, g, Payment) // at once: nobody waits before it
	done()
	if got := g.Waiting(Buyer); got != 0 {
		t.Errorf("Waiting(buyer) = %d after its wait ended, want 0", got)
	}
}

func TestArrivalsAndBackgroundLeaveTheBuyersRoom(t *testing.T) {
	g := NewGate("test", Settings{Size: 6, PaymentRoom: 1, BuyerRoom: 2}, nil)
	take(t, g, Payment)()
	if got, want := g.Limit(Arrival), 3; got != want {
		t.Fatalf("Limit(arrival) = %d, want %d", got, want)
	}
	for range 3 {
		defer take(t, g, Arrival)()
	}
	ctx, cancel := context.WithTimeout(With(context.Background(), Background), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Take(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("background Take with arrivals at their limit = %v, want a wait past the deadline", err)
	}
	defer take(t, g, Buyer)()
	defer take(t, g, Buyer)()
	defer take(t, g, Payment)()
}

func TestFreedSlotsGoFirstClassFirstThenFirstComeFirstServed(t *testing.T) {
	g := NewGate("test", Settings{Size: 1}, nil)
	hold := take(t, g, Buyer)
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	enqueue := func(c Class, name string) {
		before := g.Waiting(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := g.Take(With(context.Background(), c))
			if err != nil {
				t.Errorf("Take(%s) = %v", name, err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			done()
		}()
		waitFor(t, g, c, before+1)
	}
	// They arrive lowest class first; the first buyer before the second.
	enqueue(Background, "background")
	enqueue(Arrival, "arrival")
	enqueue(Buyer, "buyer 1")
	enqueue(Buyer, "buyer 2")
	enqueue(Payment, "payment")
	hold()
	wg.Wait()
	want := []string{"payment", "buyer 1", "buyer 2", "arrival", "background"}
	if len(order) != len(want) {
		t.Fatalf("served %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("served %v, want %v", order, want)
		}
	}
}

func TestANewcomerDoesNotPassAWaiterOfItsClassOrAbove(t *testing.T) {
	g := NewGate("test", Settings{Size: 2, PaymentRoom: 1}, nil)
	take(t, g, Payment)()
	hold := take(t, g, Buyer) // buyers are at their limit (1 of 2, one kept)
	got := make(chan error, 1)
	go func() {
		done, err := g.Take(With(context.Background(), Buyer))
		if err == nil {
			done()
		}
		got <- err
	}()
	waitFor(t, g, Buyer, 1)
	// A slot is free (the kept one) and an arrival may not take it; a payment may.
	ctx, cancel := context.WithTimeout(With(context.Background(), Arrival), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Take(ctx); err == nil {
		t.Fatal("an arrival took a slot while a buyer waited")
	}
	take(t, g, Payment)()
	hold()
	if err := <-got; err != nil {
		t.Fatalf("the waiting buyer's Take = %v", err)
	}
}

func TestAClassWaitIsBoundedAndARefusalHoldsNothing(t *testing.T) {
	wait := map[Class]time.Duration{Arrival: 20 * time.Millisecond}
	g := NewGate("test", Settings{Size: 1, Wait: wait}, nil)
	hold := take(t, g, Buyer)
	start := time.Now()
	if _, err := g.Take(With(context.Background(), Arrival)); !errors.Is(err, ErrBusy) {
		t.Fatalf("arrival Take on a full gate = %v, want ErrBusy", err)
	}
	if time.Since(start) < wait[Arrival] {
		t.Errorf("refused after %v, before its wait of %v", time.Since(start), wait[Arrival])
	}
	if g.Waiting(Arrival) != 0 || g.InUse(Arrival) != 0 {
		t.Errorf("after the refusal: waiting %d, in use %d; want 0, 0", g.Waiting(Arrival), g.InUse(Arrival))
	}
	hold()
	take(t, g, Arrival)()
}

func TestTheGateNeverHandsOutMoreThanItsSizeOrAClassMoreThanItsLimit(t *testing.T) {
	wait := map[Class]time.Duration{Arrival: time.Millisecond}
	g := NewGate("test", Settings{Size: 5, PaymentRoom: 1, BuyerRoom: 1, Wait: wait}, nil)
	take(t, g, Payment)() // the rooms are kept from the start (RoomIdle is a minute)
	var total, lower atomic.Int64
	var wg sync.WaitGroup
	for i := range 400 {
		c := Classes[i%len(Classes)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(With(context.Background(), c), 50*time.Millisecond)
			defer cancel()
			done, err := g.Take(ctx)
			if err != nil {
				return
			}
			if n := total.Add(1); n > 5 {
				t.Errorf("%d slots in use, size 5", n)
			}
			if c >= Arrival {
				if n := lower.Add(1); n > 3 {
					t.Errorf("arrivals and background hold %d slots, limit 3", n)
				}
			}
			time.Sleep(100 * time.Microsecond)
			if c >= Arrival {
				lower.Add(-1)
			}
			total.Add(-1)
			done()
		}()
	}
	wg.Wait()
	for _, c := range Classes {
		if g.InUse(c) != 0 || g.Waiting(c) != 0 {
			t.Errorf("%s: in use %d, waiting %d after everyone left; want 0, 0", c, g.InUse(c), g.Waiting(c))
		}
	}
}

func TestANilGateLetsEverythingThrough(t *testing.T) {
	var g *Gate
	done, err := g.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done()
}

func TestAContextWithoutAClassIsABuyer(t *testing.T) {
	if got := Of(context.Background()); got != Buyer {
		t.Errorf("Of(no class) = %s, want buyer", got)
	}
	if got := Of(With(context.Background(), Payment)); got != Payment {
		t.Errorf("Of(With(payment)) = %s, want payment", got)
	}
}

func TestARoomNobodyUsesIsLentAndTakenBackWhenItsClassComes(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := NewGate("test", Settings{Size: 4, PaymentRoom: 1, BuyerRoom: 1, RoomIdle: time.Minute,
		Now: func() time.Time { return now }}, nil)
	if got := g.Limit(Buyer); got != 4 {
		t.Fatalf("Limit(buyer) before any payment = %d, want 4: the payment room is lent", got)
	}
	if got := g.Limit(Arrival); got != 4 {
		t.Fatalf("Limit(arrival) before any payment or buyer = %d, want 4", got)
	}
	take(t, g, Buyer)()
	if got := g.Limit(Arrival); got != 3 {
		t.Errorf("Limit(arrival) after a buyer = %d, want 3: the buyer room is kept", got)
	}
	take(t, g, Payment)()
	if b, a := g.Limit(Buyer), g.Limit(Arrival); b != 3 || a != 2 {
		t.Errorf("limits after a payment = buyer %d, arrival %d; want 3, 2", b, a)
	}
	now = now.Add(time.Minute - time.Nanosecond)
	if got := g.Limit(Buyer); got != 3 {
		t.Errorf("Limit(buyer) within RoomIdle of the payment = %d, want 3", got)
	}
	now = now.Add(time.Nanosecond)
	if b, a := g.Limit(Buyer), g.Limit(Arrival); b != 4 || a != 4 {
		t.Errorf("limits a RoomIdle after the last payment and buyer = buyer %d, arrival %d; want both lent, 4, 4", b, a)
	}
}

// Waiters that give up anywhere in the queue (the front, the middle, the back) hold nothing and are passed
// over: the freed slots go to those still waiting, in the order they came, and Waiting counts only them.
func TestWaitersWhoGaveUpAnywhereInTheQueueArePassedOver(t *testing.T) {
	g := NewGate("test", Settings{Size: 1}, nil)
	hold := take(t, g, Arrival)
	const n = 7
	giveUp := map[int]bool{0: true, 3: true, 4: true, 6: true} // the front, two in the middle, the back
	cancels := make([]context.CancelFunc, n)
	results := make([]chan error, n)
	var (
		mu    sync.Mutex
		order []int
	)
	for i := range n {
		ctx, cancel := context.WithCancel(With(context.Background(), Arrival))
		cancels[i], results[i] = cancel, make(chan error, 1)
		go func() {
			done, err := g.Take(ctx)
			if err == nil {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				done()
			}
			results[i] <- err
		}()
		waitFor(t, g, Arrival, i+1)
	}
	for i := range n {
		if giveUp[i] {
			cancels[i]()
			if err := <-results[i]; !errors.Is(err, context.Canceled) {
				t.Fatalf("waiter %d's Take after it gave up = %v, want context.Canceled", i, err)
			}
		}
	}
	if got := g.Waiting(Arrival); got != n-len(giveUp) {
		t.Errorf("Waiting after %d gave up = %d, want %d", len(giveUp), got, n-len(giveUp))
	}
	hold()
	for i := range n {
		if !giveUp[i] {
			select {
			case err := <-results[i]:
				if err != nil {
					t.Errorf("waiter %d's Take = %v, want a slot", i, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("waiter %d got no slot within 5 s of the last one freed (one went to a waiter who gave up?)", i)
			}
		}
		cancels[i]()
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, 2, 5}; len(order) != len(want) || order[0] != 1 || order[1] != 2 || order[2] != 5 {
		t.Errorf("served %v, want %v", order, want)
	}
	if g.InUse(Arrival) != 0 || g.Waiting(Arrival) != 0 {
		t.Errorf("at the end: in use %d, waiting %d; want 0, 0", g.InUse(Arrival), g.Waiting(Arrival))
	}
	take(t, g, Arrival)()
}
