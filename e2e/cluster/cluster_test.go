//go:build cluster

// The Redis Cluster the tests run on: started by scripts/redis-cluster.sh on free ports, its masters and
// slots, the screenings placed on two of them, and the check that a screening's keys stay in its slot.

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/queue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// script starts and stops the test's Redis Cluster (relative to this package's directory).
const script = "../../scripts/redis-cluster.sh"

// checkKeysStayInTheirSlot finds every key of the test on the masters that hold them: each names one of the
// two screenings by its hash tag, sits in that screening's slot, on the master owning it (all but the
// instances' report, which is no screening's).
func checkKeysStayInTheirSlot(t *testing.T, ctx context.Context, rdb *redis.ClusterClient, prefix string, screenings ...placement) {
	t.Helper()
	var mu sync.Mutex
	where := map[string]string{} // key -> master address
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, master *redis.Client) error {
		keys, err := master.Keys(ctx, prefix+"*").Result()
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			where[k] = master.Options().Addr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for key, addr := range where {
		if key == prefix+"instances" || key == prefix+"sweeper" {
			continue // the instances' socket reports for the control room, the sweeper's lease: no screening's
		}
		i := slices.IndexFunc(screenings, func(s placement) bool {
			return strings.HasPrefix(key, queue.Key(prefix, s.id, ""))
		})
		if i < 0 {
			t.Errorf("key %s on %s belongs to neither screening", key, addr)
			continue
		}
		s := screenings[i]
		count[s.id]++
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if slot != s.slot || addr != s.master {
			t.Errorf("key %s in slot %d on %s, want slot %d on %s", key, slot, addr, s.slot, s.master)
		}
	}
	for _, s := range screenings {
		t.Logf("screening %s: %d keys in slot %d on %s", s.id, count[s.id], s.slot, s.master)
		if count[s.id] < 5 {
			t.Errorf("screening %s: %d keys found, want its line's and seats' (at least 5)", s.id, count[s.id])
		}
	}
}

// placement is a screening id with the slot of its keys and the master that owns the slot.
type placement struct {
	id     string
	slot   int64
	master string
}

// screeningsOnTwoMasters picks two screening ids whose keys hash to slots owned by different masters.
func screeningsOnTwoMasters(t *testing.T, ctx context.Context, rdb *redis.ClusterClient, prefix string) (placement, placement) {
	t.Helper()
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	locate := func(id string) placement {
		slot, err := rdb.ClusterKeySlot(ctx, queue.Key(prefix, id, "waiting")).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range shards {
			for _, r := range s.Slots {
				if r.Start <= slot && slot <= r.End {
					return placement{id: id, slot: slot, master: shardMaster(s)}
				}
			}
		}
		t.Fatalf("slot %d of %s: no master in %v", slot, id, shards)
		return placement{}
	}
	short := locate("short")
	for i := range 100 {
		if roomy := locate(fmt.Sprintf("roomy%d", i)); roomy.master != short.master {
			return short, roomy
		}
	}
	t.Fatal("no screening id found on another master than short's")
	return placement{}, placement{}
}

// shardMaster is the address ("host:port", as CLUSTER SLOTS gave it) of the master of a shard that CLUSTER
// SHARDS lists, or "" if the shard has none.
func shardMaster(s redis.ClusterShard) string {
	for _, n := range s.Nodes {
		if n.Role == "master" {
			return net.JoinHostPort(n.Endpoint, strconv.FormatInt(n.Port, 10))
		}
	}
	return ""
}

// startCluster runs scripts/redis-cluster.sh in a temp dir on free ports and stops the cluster when the test
// ends. It returns the nodes' addresses.
func startCluster(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and redis-server is missing: %v", err)
		}
		t.Skipf("redis-server is missing: %v", err)
	}
	dir := t.TempDir()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "bash", script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("stop the cluster: %v\n%s", err, out)
		}
	}
	t.Cleanup(stop)
	for attempt := 1; ; attempt++ {
		base := freeBasePort(t)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "bash", script, "start", dir, strconv.Itoa(base))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err == nil {
			addrs := strings.Split(strings.TrimSpace(string(out)), ",")
			if len(addrs) != 3 {
				t.Fatalf("cluster script printed %q, want 3 addresses", out)
			}
			t.Logf("redis cluster %v", addrs)
			return addrs
		}
		stop() // a start cut short by the timeout leaves its nodes behind
		if attempt == 3 {
			t.Fatalf("start the cluster (last base port %d): %v\n%s", base, err, stderr.String())
		}
		t.Logf("start the cluster on base port %d: %v; trying other ports", base, err)
	}
}

// freeBasePort finds a base port whose 3 node ports and 3 cluster bus ports (+10000) are free now, below the
// ephemeral range (32768 and up) so no outgoing connection takes one meanwhile.
func freeBasePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		base := 15000 + rand.IntN(7000)
		free := true
		for _, p := range []int{base, base + 1, base + 2, base + 10000, base + 10001, base + 10002} {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free base port for the cluster")
	return 0
}
