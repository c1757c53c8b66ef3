// Cluster: an Env on a Redis Cluster the test started, for the cluster tests.

package testenv

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"
)

// Cluster returns an Env on the Redis Cluster at addrs (a test starts one with scripts/redis-cluster.sh) and
// a schema of its own in the real PostgreSQL, torn down when t ends. It is of Kind Real: RedisAddr is the
// comma-separated address list, which app.Main turns into a cluster client as it does in production, and
// Redis is a *redis.ClusterClient. Without PostgreSQL the test is skipped, or fails under CI.
func Cluster(t testing.TB, addrs []string) *Env {
	t.Helper()
	ctx := context.Background()
	requirePostgres(t)
	env := &Env{Kind: Real, Prefix: Unique("t") + ":", RedisAddr: strings.Join(addrs, ",")}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64})
	env.Redis = rdb
	t.Cleanup(func() { rdb.Close() })
	t.Cleanup(func() { dropClusterKeys(rdb, env.Prefix) })
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		t.Fatalf("redis cluster %v: %v", addrs, err)
	}
	env.DatabaseURL = newSchema(t)
	env.DB = openDB(t, ctx, env.DatabaseURL)
	return env
}

// requirePostgres skips t when the real PostgreSQL does not answer, or fails it under CI.
func requirePostgres(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	db, err := sqlx.Open("postgres", databaseURL())
	if err == nil {
		err = db.PingContext(ctx)
		db.Close()
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and PostgreSQL %s does not answer: %v", databaseURL(), err)
	}
	t.Skipf("PostgreSQL %s not reachable: %v", databaseURL(), err)
}

// dropClusterKeys deletes the prefix's keys on every master, one key per command: a multi-key DEL would
// span slots.
func dropClusterKeys(rdb *redis.ClusterClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = rdb.ForEachMaster(ctx, func(ctx context.Context, master *redis.Client) error {
		iter := master.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		pipe := master.Pipeline()
		for iter.Next(ctx) {
			pipe.Unlink(ctx, iter.Val())
		}
		_, err := pipe.Exec(ctx)
		return err
	})
}
