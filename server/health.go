// The health checks: /healthz (the process answers) and /readyz (Redis and the database answer, each
// within its own deadline; which is down is said, why goes to the log only).

package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
)

// readyTimeout bounds each dependency check of /readyz (they run side by side).
const readyTimeout = 2 * time.Second

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 {"status":"ok","redis":"ok","database":"ok"} when both answer, and 503 with
// "status":"unavailable" and the one that does not as "down" otherwise. The probe is public: the cause (an
// address, a driver's words) is logged, never sent.
func (s *Server) readyz(c echo.Context) error {
	// Both checks at once, each with its own deadline: a slow Redis must not make the database look down.
	check := func(f func(context.Context) error) chan error {
		out := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
			defer cancel()
			out <- f(ctx)
		}()
		return out
	}
	redisErr, dbErr := check(s.redisReady), check(s.Store.Ping)
	checks := map[string]string{"status": "ok", "redis": "ok", "database": "ok"}
	status := http.StatusOK
	for _, dep := range []struct {
		name string
		err  error
	}{{"redis", <-redisErr}, {"database", <-dbErr}} {
		if dep.err != nil {
			checks[dep.name], checks["status"], status = "down", "unavailable", http.StatusServiceUnavailable
			s.logFor(c).Warn("readyz: "+dep.name+" is down", "err", dep.err)
		}
	}
	return c.JSON(status, checks)
}

// redisReady pings Redis; a Redis Cluster must also say its state is ok (with a master down, the others
// still answer PING while every write to the lost slots fails).
func (s *Server) redisReady(ctx context.Context) error {
	if err := s.Redis.Ping(ctx).Err(); err != nil {
		return err
	}
	cluster, ok := s.Redis.(*redis.ClusterClient)
	if !ok {
		return nil
	}
	info, err := cluster.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return errors.New("redis cluster state is not ok")
	}
	return nil
}
