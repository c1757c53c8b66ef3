// Redis as the bench reads it: its version, its command and CPU counters, and the removal of the run's keys.

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

func redisVersion(ctx context.Context, rdb *redis.Client) (string, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("redis: info: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "?", nil
}

// redisStats are the Redis server's cumulative command count and CPU time (all clients: other users of
// the same Redis count too).
type redisStats struct {
	commands int64
	cpu      time.Duration
}

func redisCounters(ctx context.Context, rdb *redis.Client) (redisStats, error) {
	info, err := rdb.Info(ctx, "stats", "cpu").Result()
	if err != nil {
		return redisStats{}, fmt.Errorf("redis: info: %w", err)
	}
	var st redisStats
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "total_commands_processed":
			st.commands, _ = strconv.ParseInt(v, 10, 64)
		case "used_cpu_sys", "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			st.cpu += time.Duration(f * float64(time.Second))
		}
	}
	return st, nil
}

// deletePrefix removes every key the run wrote under prefix.
func deletePrefix(ctx context.Context, rdb *redis.Client, prefix string) error {
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("redis: clean %s*: %w", prefix, err)
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := rdb.Del(ctx, keys[:n]...).Err(); err != nil {
			return fmt.Errorf("redis: clean %s*: %w", prefix, err)
		}
		keys = keys[n:]
	}
	return nil
}
