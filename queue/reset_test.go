// Reset: the screening's keys go, but for what numbers its line; another screening's stay; the caller's part
// runs with the line closed; every instance hears the sockets' closing and the reopening.

package queue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestResetDropsTheScreeningsKeysButItsNumbering(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, "s1", 3)
		registerN(t, q, "s2", 1)
		if _, err := q.Admit(ctx, "s1", time.Now(), settings(1, 10)); err != nil {
			t.Fatal(err)
		}
		// Keys of the screening queue does not name in keys(): booking's seat lock and sold set, a mark.
		for _, name := range []string{"seat:A1", "sold", "decoy:x"} {
			if err := env.Redis.Set(ctx, queue.Key(env.Prefix, "s1", name), "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		before, err := q.Line(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}

		events := make(chan queue.Event, 16)
		subCtx, stop := context.WithCancel(ctx)
		subscribed := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- q.Subscribe(subCtx, "s1", func(_ context.Context, ev queue.Event) { events <- ev },
				func(context.Context) { close(subscribed) }, nil)
		}()
		t.Cleanup(func() { stop(); <-done })
		<-subscribed

		var closedBetween bool
		epoch, err := q.Reset(ctx, "s1", func(ctx context.Context) error {
			var err error
			closedBetween, err = q.Closed(ctx, "s1")
			return err
		})
		if err != nil {
			t.Fatalf("Reset = %v", err)
		}
		if !closedBetween {
			t.Errorf("Closed while the caller's part ran = false, want true")
		}

		left, err := env.Redis.Keys(ctx, queue.Key(env.Prefix, "s1", "*")).Result()
		if err != nil {
			t.Fatal(err)
		}
		kept := []string{"epoch", "seq", "numbering", "head", "released", "reopened", "opened", "lock", "paused", "tick"}
		for _, key := range left {
			name := key[len(queue.Key(env.Prefix, "s1", "")):]
			if !slices.Contains(kept, name) {
				t.Errorf("key %q left after the reset, want it gone", name)
			}
		}
		if w, a, err := q.Counts(ctx, "s2"); err != nil || w != 1 || a != 0 {
			t.Errorf("s2 after resetting s1 = %d waiting, %d active (%v); want 1, 0 (untouched)", w, a, err)
		}
		after, err := q.Line(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if after.Epoch != epoch || epoch <= before.Epoch || after.Head != after.LastSeq || after.LastSeq != before.LastSeq || after.Total != 0 {
			t.Errorf("line after the reset = %+v (epoch %d), want epoch past %d, head at the last seq %d, nobody waiting",
				after, epoch, before.Epoch, before.LastSeq)
		}

		var kinds []queue.EventKind
		for len(kinds) < 2 {
			select {
			case ev := <-events:
				kinds = append(kinds, ev.Kind)
				if ev.Kind == queue.EventSoldOut && ev.Reason != queue.ReasonReset {
					t.Errorf("closing event's reason = %q, want %q", ev.Reason, queue.ReasonReset)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("events heard = %v, want sold_out then reopened", kinds)
			}
		}
		if !slices.Equal(kinds, []queue.EventKind{queue.EventSoldOut, queue.EventReopened}) {
			t.Errorf("events heard = %v, want sold_out then reopened", kinds)
		}
	})
}

func TestResetStopsWhereTheCallersPartFails(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, "s1", 1)
		boom := errors.New("boom")
		if _, err := q.Reset(ctx, "s1", func(context.Context) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("Reset with a failing part = %v, want boom", err)
		}
		if closed, err := q.Closed(ctx, "s1"); err != nil || !closed {
			t.Errorf("Closed after a failed reset = %v (%v), want true (reset again)", closed, err)
		}
		if _, err := q.Reset(ctx, "s1", nil); err != nil {
			t.Fatalf("Reset again = %v", err)
		}
		if _, err := q.Register(ctx, "s1", ""); err != nil {
			t.Errorf("Register after the second reset = %v, want a place", err)
		}
	})
}
