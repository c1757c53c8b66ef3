// Main: the server's whole life as the binary runs it, from its flags to its drain.

package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/embedded"
)

// ShutdownGrace bounds the drain after SIGTERM: sockets are told to reconnect, requests in flight finish.
const ShutdownGrace = 10 * time.Second

// readHeaderTimeout bounds the arrival of a request's header (http.read_timeout, when shorter, bounds it
// too).
const readHeaderTimeout = 10 * time.Second

// proxiedDrain bounds how long a drain waits for the gate's proxied requests still running (an origin's
// long stream) before it ends them: half the grace, the rest left for the sockets and the count-offs.
const proxiedDrain = ShutdownGrace / 2

// Main starts the server and serves until ctx ends, then drains. It prints the URL to open on stdout once
// the listener is up ("waitroom: open URL"), the control room's ("waitroom: control room URL") when
// admin.key is set, and the ops listener's ("waitroom: ops URL") when http.ops_addr is set, and logs there
// as JSON, the last line "server stopped" after a clean drain. A clean drain returns nil: a signal is how
// the server is meant to stop, so its exit status is 0. args are the command line (args[0] the program),
// getenv the environment.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(commandFlags(args, stdout), args, getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: logLevel(cfg.Log.Level)}))
	rdb, closeRedis, err := openRedis(cfg, log)
	if err != nil {
		return err
	}
	defer closeRedis()
	db, err := booking.Open(ctx, cfg.Database.URL, cfg.Data.Dir)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := booking.Migrate(ctx, db); err != nil {
		return err
	}
	if cfg.Demo.Enabled {
		if err := seedDemo(ctx, booking.NewStore(db), log); err != nil {
			return err
		}
	}
	if cfg.Demo.Line {
		if err := seedDemoLine(ctx, booking.NewStore(db), log); err != nil {
			return err
		}
	}
	if err := checkHoldScreenings(ctx, booking.NewStore(db), cfg.Booking); err != nil {
		return err
	}
	if err := drawPassKey(&cfg.Pass, log); err != nil {
		return err
	}
	if err := drawLogKey(&cfg, log); err != nil {
		return err
	}
	a, err := New(cfg, Backends{Redis: rdb, DB: db, Log: log})
	if err != nil {
		return err
	}
	if cfg.Admin.Key == "" {
		log.Info("admin.key not set: the admin API and control room are off (set WAITROOM_ADMIN_KEY)")
	}

	lns, err := a.listen(stdout)
	if err != nil {
		return err
	}
	log.Info("serving", "addr", lns[0].ln.Addr().String(), "embedded_redis", cfg.Embedded(), "database", db.DriverName())
	if err := a.serve(ctx, lns); err != nil {
		return err
	}
	log.Info("server stopped")
	return nil
}

// commandFlags is the flag set of a command whose arguments are args (args[0] its name), its usage written
// to stdout; the command adds its own flags before loadConfig parses them.
func commandFlags(args []string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	return fs
}

// loadConfig parses args with fs, and -config, and reads the configuration that names; what is left of args
// is fs.Args().
func loadConfig(fs *flag.FlagSet, args []string, getenv func(string) string) (config.Config, error) {
	configPath := fs.String("config", "config.yaml", "settings file (absent: defaults); every key can be overridden by WAITROOM_<KEY>")
	if err := fs.Parse(args[1:]); err != nil {
		return config.Config{}, err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	return config.Load(*configPath, explicit, getenv)
}

// serve runs the instance's background work and its HTTP listeners (lns, listen's) until ctx ends, then
// drains: the listeners first, all at once, so no request meets a stopped part, then the sockets (told 1012:
// reconnect), then the count-offs still on their way to Redis, and last the background work. A listener that
// fails ends them all.
func (a *App) serve(ctx context.Context, lns []listener) error {
	// The proxied listeners' requests (the gate's) end with this context, once their server has shut down:
	// Shutdown does not wait for upgraded connections, and the proxy closes one when its request ends.
	proxied, endProxied := context.WithCancel(context.Background())
	defer endProxied()
	servers := make([]*http.Server, len(lns))
	for i, l := range lns {
		servers[i] = newHTTPServer(a.Config.HTTP, l, proxied)
	}
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBg()
	bgErr := make(chan error, 1)
	go func() { bgErr <- a.Run(bgCtx) }()

	serveErr := make(chan error, len(lns))
	for i, srv := range servers {
		go func() {
			err := srv.Serve(lns[i].ln)
			if !errors.Is(err, http.ErrServerClosed) {
				err = fmt.Errorf("serve %s: %w", lns[i].name, err)
			}
			serveErr <- err
		}()
	}
	var runErr, failed error
	stoppedEarly := false // the background work ended on its own (a part of it failed)
	served := 0           // the listeners whose Serve has returned
	select {
	case <-ctx.Done():
	case failed = <-serveErr:
		served++
	case runErr = <-bgErr:
		stoppedEarly = true
	}

	a.Log.Info("draining")
	drainCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	a.Server.StopStreams()
	shutdownErrs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() { shutdownErrs[i] = srv.Shutdown(drainCtx) })
	}
	// An origin's stream through the gate (not an upgrade: Shutdown waits for it) may not end by itself; it
	// is cut at proxiedDrain, so that the sockets' drain after this still has half the grace.
	cut := time.AfterFunc(proxiedDrain, endProxied)
	wg.Wait()
	cut.Stop()
	endProxied()
	for ; served < len(servers); served++ {
		if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
			failed = errors.Join(failed, err)
		}
	}
	hubErr := a.Hub.Shutdown(drainCtx)
	// The sockets' count-offs may still be queued (hub: a drain closes them all at once).
	settleErr := a.Queue.Settle(drainCtx)
	stopBg()
	if !stoppedEarly {
		runErr = <-bgErr
	}
	return errors.Join(failed, errors.Join(shutdownErrs...), hubErr, settleErr, runErr)
}

// listener is one of the instance's HTTP listeners: each is served with the timeouts of http.* and drained
// with the others (serve).
type listener struct {
	name    string // for the log and the errors: "http", "ops"
	ln      net.Listener
	handler http.Handler
	// unboundedWrites leaves http.write_timeout off: the ops listener's profiles (bench.pprof) write for as
	// long as they are asked to run, and net/http/pprof refuses a profile longer than the write timeout.
	unboundedWrites bool
	// proxied is the gate's: no read or write bound of the listener's (the gate bounds a request's read
	// itself, never an upgrade's, and an origin's stream may write for long), and the requests' context ends
	// after the drain (serve).
	proxied bool
}

// listen opens the instance's listeners, the public one first, and prints the URL of each on stdout
// ("waitroom: open URL", "waitroom: ops URL"), and the control room's when the admin API is on. To serve another, open it here and append it.
func (a *App) listen(stdout io.Writer) ([]listener, error) {
	cfg := a.Config.HTTP
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("app: listen %s: %w", cfg.Addr, err)
	}
	lns := []listener{{name: "http", ln: ln, handler: a.Server.Handler()}}
	fmt.Fprintf(stdout, "waitroom: open %s\n", publicURL(ln.Addr()))
	if a.Config.Admin.Key != "" {
		fmt.Fprintf(stdout, "waitroom: control room %sadmin\n", publicURL(ln.Addr()))
	}
	if cfg.OpsAddr != "" {
		ops, err := net.Listen("tcp", cfg.OpsAddr)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("app: listen http.ops_addr %s: %w", cfg.OpsAddr, err)
		}
		lns = append(lns, listener{name: "ops", ln: ops, handler: a.Server.OpsHandler(), unboundedWrites: a.Config.Bench.Pprof})
		fmt.Fprintf(stdout, "waitroom: ops %s\n", publicURL(ops.Addr()))
	}
	if a.Gate != nil {
		g, err := a.gateListener(ln)
		if err != nil {
			for _, l := range lns {
				l.ln.Close()
			}
			return nil, err
		}
		lns = append(lns, g)
		fmt.Fprintf(stdout, "waitroom: gate %s\n", publicURL(g.ln.Addr()))
	}
	return lns, nil
}

// newHTTPServer serves l with the listeners' bounds: a request's header and whole body must arrive within
// http.read_timeout (the header within readHeaderTimeout), its answer be written within write_timeout, a
// keep-alive connection wait at most idle_timeout for its next request, and a header be at most
// max_header_bytes (431 beyond). The long-lived answers move their own deadlines: the socket (gorilla's
// upgrade clears the server's deadlines, and the hub sets its own) and the control room's stream
// (adminStream, per frame).
func newHTTPServer(h config.HTTP, l listener, proxied context.Context) *http.Server {
	srv := &http.Server{
		Handler: l.handler, ReadHeaderTimeout: min(readHeaderTimeout, h.ReadTimeout), ReadTimeout: h.ReadTimeout,
		WriteTimeout: h.WriteTimeout, IdleTimeout: h.IdleTimeout, MaxHeaderBytes: h.MaxHeaderBytes,
	}
	if l.unboundedWrites {
		srv.WriteTimeout = 0
	}
	if l.proxied {
		srv.ReadTimeout, srv.WriteTimeout = 0, 0
		srv.BaseContext = func(net.Listener) context.Context { return proxied }
	}
	return srv
}

// trustedProxies reads http.trusted_proxies (config.Validate has refused any that does not parse).
func trustedProxies(h config.HTTP) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(h.TrustedProxies))
	for _, p := range h.TrustedProxies {
		if prefix, err := config.ParsePrefix(p); err == nil {
			out = append(out, prefix)
		}
	}
	return out
}

// openRedis connects to redis.addr (comma-separated addresses mean a cluster), or starts the in-process
// Redis when it is empty.
func openRedis(cfg config.Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if cfg.Embedded() {
		m, err := embedded.StartRedis()
		if err != nil {
			return nil, nil, err
		}
		log.Warn("redis.addr not set: using an in-process Redis; fine for one instance, not for several")
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), Password: m.Password()})
		return rdb, func() { rdb.Close(); m.Close() }, nil
	}
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: cfg.RedisAddrs(), IsClusterMode: cfg.Redis.Cluster})
	return rdb, func() { rdb.Close() }, nil
}

// seedDemo creates the demo screening (rows A–J × seats 1–10, on sale now) unless it exists.
func seedDemo(ctx context.Context, store *booking.Store, log *slog.Logger) error {
	now := time.Now().UTC().Truncate(time.Second)
	created, err := store.EnsureScreening(ctx, booking.Screening{
		ID: "demo", Name: "Demo screening", StartsAt: now.Add(2 * time.Hour), SaleOpensAt: now,
	}, booking.Grid(10, 10))
	if err != nil {
		return err
	}
	if created {
		log.Info("seeded the demo screening", "screening", "demo", "seats", 100)
	}
	return nil
}

func publicURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String() + "/"
	}
	host := "localhost"
	if !tcp.IP.IsUnspecified() && !tcp.IP.IsLoopback() {
		host = tcp.IP.String()
	}
	return fmt.Sprintf("http://%s/", net.JoinHostPort(host, fmt.Sprint(tcp.Port)))
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
