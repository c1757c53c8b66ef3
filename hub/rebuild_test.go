// A line Redis lost, rebuilt from this instance's sockets (recover.go), when one of them took a place on the
// empty Redis before the rebuild.

package hub_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// A socket that registered on the empty Redis after the loss holds number 1 of the new numbering. When the
// hub rebuilds, that number is not taken for number 1 of the lost line: the sockets that waited before the
// loss keep their order, and the newcomer waits behind them (and is told so).
func TestRebuildPutsASocketPlacedAfterTheLossBehindTheLostLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		settings := queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 10, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)
		var before []string
		for i := range 3 {
			s := r.dial(t, "s1", "")
			m := s.Next(t, readWait)
			if m.Type != "queued" || m.Rank != int64(i+1) {
				t.Fatalf("socket %d's first message = %+v, want queued at rank %d", i, m, i+1)
			}
			before = append(before, m.Token)
		}

		// Redis loses the line; a newcomer registers on it before the hub notices.
		keys, err := env.Redis.Keys(ctx, queue.Key(env.Prefix, "s1", "*")).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Redis.Del(ctx, keys...).Err(); err != nil {
			t.Fatal(err)
		}
		newcomer := r.dial(t, "s1", "")
		first := newcomer.Next(t, readWait)
		if first.Type != "queued" || first.Rank != 1 || first.Total != 1 {
			t.Fatalf("the newcomer's first message = %+v, want queued at rank 1 of 1 (the line is empty)", first)
		}

		// An event the hub cannot place (a reopening) makes it read the line whole: it finds it lost.
		var line queue.Line
		r.hub.Dispatch(ctx, &line, queue.Event{Kind: queue.EventReopened, Screening: "s1", TickAtMs: time.Now().UnixMilli(), Epoch: 1})

		got, err := env.Redis.ZRangeWithScores(ctx, queue.Key(env.Prefix, "s1", "waiting"), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, z := range got {
			order = append(order, z.Member.(string))
		}
		if want := append(slices.Clone(before), first.Token); !slices.Equal(order, want) {
			t.Errorf("the line after the rebuild = %v, want %v (the newcomer behind those who waited before the loss)", order, want)
		}
		m, err := newcomer.ReadUntil(func(m testenv.Message) bool { return m.Type == "position" }, readWait)
		if err != nil || m.Rank != 4 || m.Total != 4 {
			t.Errorf("the newcomer told after the rebuild = %+v, %v; want rank 4 of 4", m, err)
		}
	})
}
