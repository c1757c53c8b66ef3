// Healthcheck: `waitroom healthcheck`, the probe a container runs on itself (the image's HEALTHCHECK), since
// the image has no shell and no curl: it asks the server of the same settings for /healthz (or /readyz).

package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/config"
)

// healthcheckTimeout bounds the whole probe by default: a healthy server answers /healthz in microseconds
// and /readyz within its own dependency timeout, so a probe that waits longer is looking at a hung server.
const healthcheckTimeout = 3 * time.Second

// Healthcheck reads the same settings the server does (-config, WAITROOM_*), asks the server listening on
// http.addr's port for /healthz (-ready: /readyz), and returns nil on 200 and an error saying why
// otherwise. args are the subcommand's command line, args[0] being its name ("healthcheck"); flag errors
// and -h are written to stderr.
func Healthcheck(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "config.yaml", "settings file (absent: defaults); every key can be overridden by WAITROOM_<KEY>")
	ready := fs.Bool("ready", false, "ask /readyz (Redis and the database answer) instead of /healthz (the process answers)")
	timeout := fs.Duration("timeout", healthcheckTimeout, "give up after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected arguments %q", fs.Args())
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := config.Load(*configPath, explicit, getenv)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	target, err := probeAddr(cfg.HTTP.Addr)
	if err != nil {
		return err
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	return probe(ctx, "http://"+target+path, *timeout)
}

// probeAddr is where the server of http.addr is reached from its own host: the loopback address when it
// listens on every address (":8080", "0.0.0.0:8080", "[::]:8080"), its own address otherwise.
func probeAddr(httpAddr string) (string, error) {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return "", fmt.Errorf("healthcheck: http.addr %q: %w", httpAddr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("healthcheck: http.addr %q has no fixed port to probe", httpAddr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// probe GETs target within timeout and wants 200.
func probe(ctx context.Context, target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("healthcheck: GET %s: no answer within %s", target, timeout)
		}
		var ue *url.Error // it repeats the method and URL this message already names
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("healthcheck: GET %s: %w", target, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s: %s, want 200", target, resp.Status)
	}
	return nil
}
