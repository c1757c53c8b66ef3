// Main: the server's whole life as the binary runs it, from its flags to its drain.

package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/embedded"
)

// ShutdownGrace bounds the drain after SIGTERM: sockets are told to reconnect, requests in flight finish.
const ShutdownGrace = 10 * time.Second

// Main starts the server and serves until ctx ends, then drains. It prints the URL to open on stdout once
// the listener is up, and logs there as JSON. args are the command line (args[0] the program), getenv the
// environment.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(args, getenv, stdout)
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
	if cfg.Pass.Secret == "" {
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		cfg.Pass.Secret = base64.StdEncoding.EncodeToString(secret)
		log.Warn("pass.secret not set: generated one for this process; passes will not survive a restart (set WAITROOM_PASS_SECRET)")
	}
	a := New(cfg, Backends{Redis: rdb, DB: db, Log: log})
	if cfg.Admin.Key == "" {
		log.Info("admin.key not set: the admin API and control room are off (set WAITROOM_ADMIN_KEY)")
	}

	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTP.Addr, err)
	}
	fmt.Fprintf(stdout, "waitroom: open %s\n", publicURL(ln.Addr()))
	log.Info("serving", "addr", ln.Addr().String(), "embedded_redis", cfg.Embedded(), "database", db.DriverName())
	return a.serve(ctx, ln)
}

// loadConfig reads the flags (-config) and the configuration they name.
func loadConfig(args []string, getenv func(string) string, stdout io.Writer) (config.Config, error) {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	configPath := fs.String("config", "config.yaml", "settings file (absent: defaults); every key can be overridden by WAITROOM_<KEY>")
	if err := fs.Parse(args[1:]); err != nil {
		return config.Config{}, err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	return config.Load(*configPath, explicit, getenv)
}

// serve runs the instance's background work and its HTTP server on ln until ctx ends, then drains: the
// HTTP server first, so no request meets a stopped part, then the sockets (told 1012: reconnect), then the
// count-offs still on their way to Redis, and last the background work.
func (a *App) serve(ctx context.Context, ln net.Listener) error {
	httpSrv := &http.Server{Handler: a.Server.Handler(), ReadHeaderTimeout: 10 * time.Second}
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBg()
	bgErr := make(chan error, 1)
	go func() { bgErr <- a.Run(bgCtx) }()

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	var runErr error
	stoppedEarly := false // the background work ended on its own (a part of it failed)
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		stopBg()
		<-bgErr
		return fmt.Errorf("serve: %w", err)
	case runErr = <-bgErr:
		stoppedEarly = true
	}

	a.Log.Info("draining")
	drainCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	a.Server.StopStreams()
	shutdownErr := httpSrv.Shutdown(drainCtx)
	<-serveErr
	hubErr := a.Hub.Shutdown(drainCtx)
	// The sockets' count-offs may still be queued (hub: a drain closes them all at once).
	settleErr := a.Queue.Settle(drainCtx)
	stopBg()
	if !stoppedEarly {
		runErr = <-bgErr
	}
	return errors.Join(shutdownErr, hubErr, settleErr, runErr)
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
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
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
