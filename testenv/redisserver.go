// RedisServer: a redis-server of the test's own, to kill and start again empty.

package testenv

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server a test started on a loopback port of its own, without persistence (as
// production's is), so the test can kill it and start it again empty on the same address.
type RedisServer struct {
	t    testing.TB
	Addr string
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts a redis-server on a free loopback port; it is killed when t ends. Without redis-server
// on the PATH the test is skipped.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &RedisServer{t: t, Addr: addr, dir: t.TempDir()}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// Start runs the server (again) and waits until it answers.
func (s *RedisServer) Start() {
	s.t.Helper()
	_, port, _ := net.SplitHostPort(s.Addr)
	s.cmd = exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--loglevel", "warning")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server on %s: %v", s.Addr, err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer within 10s: %v", s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server at once (SIGKILL): everything it held is gone.
func (s *RedisServer) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Standalone returns an Env on the single Redis at addr (one a test started) and a schema of its own in the
// real PostgreSQL, torn down when t ends. Without PostgreSQL the test is skipped, or fails under CI.
func Standalone(t testing.TB, addr string) *Env {
	t.Helper()
	requirePostgres(t)
	env := &Env{Kind: Real, Prefix: Unique("t") + ":", RedisAddr: addr}
	env.Redis = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { env.Redis.Close() })
	env.DatabaseURL = newSchema(t)
	env.DB = openDB(t, context.Background(), env.DatabaseURL)
	return env
}

// String names the server for test logs.
func (s *RedisServer) String() string { return "redis-server " + s.Addr + " (pid " + s.pid() + ")" }

func (s *RedisServer) pid() string {
	if s.cmd == nil || s.cmd.Process == nil {
		return "stopped"
	}
	return strconv.Itoa(s.cmd.Process.Pid)
}

var _ fmt.Stringer = (*RedisServer)(nil)
