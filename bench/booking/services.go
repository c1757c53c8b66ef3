package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"
)

// postgres is the admin connection and the bench's own database.
type postgres struct {
	admin    *sqlx.DB
	name     string
	benchURL string
}

// openPG connects with the admin URL and creates the bench's database; close drops it.
func openPG(ctx context.Context, adminURL, name string) (*postgres, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	admin, err := sqlx.Open("postgres", adminURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	admin.SetMaxOpenConns(1)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		admin.Close()
		return nil, fmt.Errorf("postgres: create database: %w", err)
	}
	u.Path = "/" + name
	return &postgres{admin: admin, name: name, benchURL: u.String()}, nil
}

func (p *postgres) close(ctx context.Context) error {
	defer p.admin.Close()
	if _, err := p.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(p.name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("postgres: drop database %s: %w", p.name, err)
	}
	return nil
}

// dbCounters are the bench database's cumulative counters in pg_stat_database.
type dbCounters struct {
	// Xacts is xact_commit + xact_rollback: every transaction, a lone statement's included. A new
	// connection counts one too (the backend's start-up reads the catalog in a transaction of its own).
	Xacts int64 `db:"xacts"`
	// Sessions is the connections established (PostgreSQL 14+).
	Sessions int64 `db:"sessions"`
}

// counters reads the bench database's pg_stat_database row as it is now (from the admin database, so the
// reading itself is not counted).
func (p *postgres) counters(ctx context.Context) (dbCounters, error) {
	if _, err := p.admin.ExecContext(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return dbCounters{}, fmt.Errorf("postgres: stats: %w", err)
	}
	var c dbCounters
	if err := p.admin.GetContext(ctx, &c, `SELECT xact_commit + xact_rollback AS xacts, sessions FROM pg_stat_database WHERE datname = $1`, p.name); err != nil {
		return dbCounters{}, fmt.Errorf("postgres: stats: %w", err)
	}
	return c, nil
}

// maintenance is one autovacuum or autoanalyze of a table.
type maintenance struct {
	Table string    `json:"table" db:"relname"`
	Kind  string    `json:"kind" db:"kind"`
	At    time.Time `json:"at" db:"at"`
}

// maintenance lists what autovacuum did in the bench database, catalogs included (last run per table).
func (p *postgres) maintenance(ctx context.Context) ([]maintenance, error) {
	db, err := sqlx.Open("postgres", p.benchURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer db.Close()
	var out []maintenance
	err = db.SelectContext(ctx, &out, `SELECT relname, 'autovacuum' AS kind, last_autovacuum AS at FROM pg_stat_all_tables WHERE last_autovacuum IS NOT NULL
		UNION ALL SELECT relname, 'autoanalyze', last_autoanalyze FROM pg_stat_all_tables WHERE last_autoanalyze IS NOT NULL
		ORDER BY at`)
	if err != nil {
		return nil, fmt.Errorf("postgres: autovacuum: %w", err)
	}
	return out, nil
}

func (p *postgres) version(ctx context.Context) (string, error) {
	var v string
	if err := p.admin.GetContext(ctx, &v, `SELECT current_setting('server_version')`); err != nil {
		return "", fmt.Errorf("postgres: version: %w", err)
	}
	return strings.Fields(v)[0], nil
}

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

// serverEnv is what the server under test is pointed at.
type serverEnv struct {
	redisAddr, prefix, databaseURL, secret string
	pprof                                  bool // serve /debug/pprof (-profile)
}

// server is the waitroom binary, built from this module, running as a subprocess.
type server struct {
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:port
	tmp     string
	logPath string
	done    chan struct{}
	waitErr error
	client  *http.Client // for control requests (health, metrics), never for a burst
}

// serverStartup bounds the wait for /healthz (migrations included).
const serverStartup = 60 * time.Second

// startServer builds ./cmd/waitroom from the module root (go env GOMOD) and starts it on a free port of
// 127.0.0.1, with the scheduler slowed to one tick an hour (the bench admits its users itself) and the
// floor route on. It returns once /healthz answers.
func startServer(ctx context.Context, getenv func(string) string, env serverEnv, logf func(string, ...any)) (*server, error) {
	goBin := getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return nil, errors.New("go env GOMOD: not inside the waitroom module; run from its root (make bench-booking)")
	}
	tmp, err := os.MkdirTemp("", "bench-booking-")
	if err != nil {
		return nil, err
	}
	s := &server{tmp: tmp, logPath: filepath.Join(tmp, "server.log"), done: make(chan struct{}), client: &http.Client{Timeout: 10 * time.Second}}
	bin := filepath.Join(tmp, "waitroom")
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/waitroom")
	build.Dir = filepath.Dir(gomod)
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("go build ./cmd/waitroom: %w\n%s", err, out)
	}
	logf("server built from %s", filepath.Dir(gomod))

	addr, err := freeAddr()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	s.base = "http://" + addr
	s.cmd = exec.Command(bin)
	s.cmd.Dir = tmp // no config.yaml there: defaults plus the environment below
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.Env = append(withoutWaitroomVars(os.Environ()),
		"WAITROOM_HTTP_ADDR="+addr,
		"WAITROOM_REDIS_ADDR="+env.redisAddr,
		"WAITROOM_REDIS_PREFIX="+env.prefix,
		"WAITROOM_DATABASE_URL="+env.databaseURL,
		"WAITROOM_PASS_SECRET="+env.secret,
		"WAITROOM_DEMO_ENABLED=false",
		"WAITROOM_BENCH_FLOOR=true",
		"WAITROOM_ADMISSION_INTERVAL=1h",
		"WAITROOM_LOG_LEVEL=warn",
		"WAITROOM_BENCH_PPROF="+strconv.FormatBool(env.pprof),
	)
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start server: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.waitHealthy(ctx); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		return nil, errors.Join(err, s.stop(cctx))
	}
	return s, nil
}

func (s *server) waitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(serverStartup)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("server exited before it was healthy (%v):\n%s", s.waitErr, s.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if s.get(ctx, "/healthz") == nil {
			return nil
		}
	}
	return fmt.Errorf("server not healthy after %s:\n%s", serverStartup, s.logTail())
}

// profileSeconds is how long a burst's CPU profile runs: a warm burst ends in well under a second, a cold
// one in about half.
const profileSeconds = 1

// profileStart is how long a profile is given to start before the burst is released: the profiler
// answers only at its end, so its start cannot be awaited.
const profileStart = 50 * time.Millisecond

// profiler returns a profiler that writes the server's CPU profile of a burst to dir/name.pprof, or nil
// when dir is "".
func (s *server) profiler(dir, name string) profiler {
	if dir == "" {
		return nil
	}
	return func(ctx context.Context) func() error {
		done := make(chan error, 1)
		go func() {
			b, err := s.fetch(ctx, "/debug/pprof/profile?seconds="+strconv.Itoa(profileSeconds))
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, name+".pprof"), []byte(b), 0o644)
			}
			done <- err
		}()
		time.Sleep(profileStart)
		return func() error {
			if err := <-done; err != nil {
				return fmt.Errorf("profile %s: %w", name, err)
			}
			return nil
		}
	}
}

// get fetches path and wants 200.
func (s *server) get(ctx context.Context, path string) error {
	_, err := s.fetch(ctx, path)
	return err
}

func (s *server) fetch(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return string(b), nil
}

// poolStats reads the server's pool waits from its /metrics (collectors.NewDBStatsCollector, db_name
// "waitroom").
func (s *server) poolStats(ctx context.Context) (poolStats, error) {
	text, err := s.fetch(ctx, "/metrics")
	if err != nil {
		return poolStats{}, err
	}
	waits, ok1 := metricValue(text, "go_sql_wait_count_total", `db_name="waitroom"`)
	secs, ok2 := metricValue(text, "go_sql_wait_duration_seconds_total", `db_name="waitroom"`)
	if !ok1 || !ok2 {
		return poolStats{}, errors.New("server /metrics: no go_sql_wait_count_total / go_sql_wait_duration_seconds_total for db_name=\"waitroom\"")
	}
	st := poolStats{waits: int64(waits), waitTime: time.Duration(secs * float64(time.Second)), cpu: -1}
	if cpu, ok := metricValue(text, "process_cpu_seconds_total", ""); ok {
		st.cpu = time.Duration(cpu * float64(time.Second))
	}
	return st, nil
}

// metricValue finds the sample of name whose labels contain label (a sample without labels when label is
// empty) in Prometheus text format.
func metricValue(text, name, label string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		var labels, value string
		if rest, ok := strings.CutPrefix(line, name+"{"); ok {
			if labels, value, ok = strings.Cut(rest, "} "); !ok {
				continue
			}
		} else if rest, ok := strings.CutPrefix(line, name+" "); ok && label == "" {
			value = rest
		} else {
			continue
		}
		if !strings.Contains(labels, label) {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// problems returns the warnings and errors the server logged (it logs at warn level).
func (s *server) problems() []string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return out
}

func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop interrupts the server (it drains and exits), kills it if it has not exited by the end of ctx, and
// removes the build directory.
func (s *server) stop(ctx context.Context) error {
	defer os.RemoveAll(s.tmp)
	select {
	case <-s.done:
		return fmt.Errorf("server had exited (%v):\n%s", s.waitErr, s.logTail())
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-ctx.Done():
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("server did not stop on SIGINT; killed:\n%s", s.logTail())
	}
	if s.waitErr != nil {
		return fmt.Errorf("server: %v:\n%s", s.waitErr, s.logTail())
	}
	return nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func withoutWaitroomVars(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "WAITROOM_") {
			out = append(out, kv)
		}
	}
	return out
}
