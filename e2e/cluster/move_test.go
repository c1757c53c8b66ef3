//go:build cluster

// A screening's slot moves to another master and its sockets are still pushed.

package cluster

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// TestClusterSlotMoveKeepsPushing: when a screening's slot moves to another master (resharding, failover),
// Redis ends the sharded subscription itself; the instance must subscribe again on the new owner, so a
// socket still gets its pass when the next user is admitted after the move.
func TestClusterSlotMoveKeepsPushing(t *testing.T) {
	env := testenv.Cluster(t, startCluster(t))
	rdb := env.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	env.Demo(t, "mv", 1, 10)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_DEMO_ENABLED": "false", "WAITROOM_ADMISSION_INTERVAL": "500ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "1", "WAITROOM_ADMISSION_MAX_ACTIVE": "1",
	})
	a := srv.Dial(t, "mv", "")
	a.Next(t, 5*time.Second)
	b := srv.Dial(t, "mv", "")
	if q := b.Next(t, 5*time.Second); q.Type != "queued" {
		t.Fatalf("b's first message = %+v, want queued", q)
	}
	adm, _ := a.Until(t, "admitted", 10*time.Second)
	if adm.Pass == "" {
		t.Fatal("a was never admitted")
	}

	moveSlot(t, ctx, rdb, queue.Key(env.Prefix, "mv", "x"))

	// a's reservation frees the only slot: the next admission (on the new owner) is b's.
	if code, body := srv.Reserve(t, "mv", adm.Pass, "A1"); code != http.StatusCreated {
		t.Fatalf("reserve after the move = %d %v, want 201", code, body)
	}
	got, seen := b.Until(t, "admitted", 10*time.Second)
	if got.Type != "admitted" || got.Pass == "" {
		t.Fatalf("b after the move got %+v (before: %+v), want its pass; server log:\n%s", got, seen, srv.Out.String())
	}
}

// moveSlot migrates the slot of key, with its keys, from its master to another one.
func moveSlot(t *testing.T, ctx context.Context, rdb *redis.ClusterClient, key string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	must(err)
	shards, err := rdb.ClusterShards(ctx).Result()
	must(err)
	var src, dst string
	for _, s := range shards {
		for _, r := range s.Slots {
			if r.Start <= slot && slot <= r.End {
				src = shardMaster(s)
			}
		}
	}
	for _, s := range shards {
		if m := shardMaster(s); m != "" && m != src {
			dst = m
		}
	}
	sc := redis.NewClient(&redis.Options{Addr: src})
	dc := redis.NewClient(&redis.Options{Addr: dst})
	defer sc.Close()
	defer dc.Close()
	srcID, err := sc.ClusterMyID(ctx).Result()
	must(err)
	dstID, err := dc.ClusterMyID(ctx).Result()
	must(err)
	must(dc.Do(ctx, "cluster", "setslot", slot, "importing", srcID).Err())
	must(sc.Do(ctx, "cluster", "setslot", slot, "migrating", dstID).Err())
	keys, err := sc.ClusterGetKeysInSlot(ctx, int(slot), 1000).Result()
	must(err)
	host, port, _ := strings.Cut(dst, ":")
	for _, k := range keys {
		must(sc.Do(ctx, "migrate", host, port, k, 0, 5000).Err())
	}
	must(sc.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err())
	must(dc.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err())
	t.Logf("moved slot %d (%d keys) from %s to %s", slot, len(keys), src, dst)
}
