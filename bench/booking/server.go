// The server under test: the waitroom binary built from this module, run as a subprocess on a free port,
// asked for its health, metrics and profiles, and stopped.

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serverEnv is what the server under test is pointed at.
type serverEnv struct {
	redisAddr, prefix, databaseURL, secret string
	pprof                                  bool   // serve /debug/pprof (-profile)
	checkout                               string // booking.checkout (-checkout)
}

// server is the waitroom binary, built from this module, running as a subprocess.
type server struct {
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:port
	ops     string // its ops listener (http.ops_addr): /metrics, /debug/pprof
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
	root, err := moduleRoot(ctx, goBin)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "bench-booking-")
	if err != nil {
		return nil, err
	}
	s := &server{tmp: tmp, logPath: filepath.Join(tmp, "server.log"), done: make(chan struct{}), client: &http.Client{Timeout: 10 * time.Second}}
	bin := filepath.Join(tmp, "waitroom")
	if err := buildServer(ctx, goBin, root, bin); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	logf("server built from %s", root)
	if err := s.start(bin, env); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := s.waitHealthy(ctx); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		return nil, errors.Join(err, s.stop(cctx))
	}
	return s, nil
}

// moduleRoot is the directory of the go.mod that goBin finds from here: the bench builds the server of
// the module it runs in.
func moduleRoot(ctx context.Context, goBin string) (string, error) {
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the waitroom module; run from its root (make bench-booking)")
	}
	return filepath.Dir(gomod), nil
}

// buildServer builds ./cmd/waitroom of the module at root into bin.
func buildServer(ctx context.Context, goBin, root, bin string) error {
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/waitroom")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/waitroom: %w\n%s", err, out)
	}
	return nil
}

// start runs bin on a free port, in the server's temp dir (no config.yaml there: defaults plus the
// environment env makes), its output to the log file, and notes its exit in s.done.
func (s *server) start(bin string, env serverEnv) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	opsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	s.base, s.ops = "http://"+addr, "http://"+opsAddr
	s.cmd = exec.Command(bin)
	s.cmd.Dir = s.tmp
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.Env = append(withoutWaitroomVars(os.Environ()), env.vars(addr, opsAddr)...)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	return nil
}

// vars is the server's WAITROOM_* environment: listening on addr (its ops listener on opsAddr), pointed at the bench's Redis prefix and
// database, with the demo off, the floor route on, the scheduler slowed to one tick an hour, and the
// checkout asked for (hold: with the default hold_ttl of 10 minutes, no hold lapses during the run; the
// demo checkout gives the held orders, never paid, somewhere to pay, as make run does).
func (env serverEnv) vars(addr, opsAddr string) []string {
	return []string{
		"WAITROOM_HTTP_ADDR=" + addr,
		"WAITROOM_HTTP_OPS_ADDR=" + opsAddr,
		"WAITROOM_REDIS_ADDR=" + env.redisAddr,
		"WAITROOM_REDIS_PREFIX=" + env.prefix,
		"WAITROOM_DATABASE_URL=" + env.databaseURL,
		"WAITROOM_PASS_SECRET=" + env.secret,
		"WAITROOM_DEMO_ENABLED=false",
		"WAITROOM_BENCH_FLOOR=true",
		"WAITROOM_ADMISSION_INTERVAL=1h",
		"WAITROOM_LOG_LEVEL=warn",
		"WAITROOM_BENCH_PPROF=" + strconv.FormatBool(env.pprof),
		"WAITROOM_BOOKING_CHECKOUT=" + env.checkout,
		"WAITROOM_BOOKING_DEMO_CHECKOUT=true",
	}
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
			b, err := s.fetch(ctx, s.ops+"/debug/pprof/profile?seconds="+strconv.Itoa(profileSeconds))
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

// get fetches path of the public listener and wants 200.
func (s *server) get(ctx context.Context, path string) error {
	_, err := s.fetch(ctx, s.base+path)
	return err
}

// fetch gets url (the server's base or ops URL and a path) and wants 200.
func (s *server) fetch(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

// poolStats reads the server's pool waits from its /metrics (collectors.NewDBStatsCollector, db_name
// "waitroom").
func (s *server) poolStats(ctx context.Context) (poolStats, error) {
	text, err := s.fetch(ctx, s.ops+"/metrics")
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
