// Command waitroom is the waiting-room and seat-reservation server. Wiring and flags only.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/embedded"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/server"
)

// shutdownGrace bounds the drain after SIGTERM: sockets are told to reconnect, requests in flight finish.
const shutdownGrace = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "waitroom:", err)
		os.Exit(1)
	}
}

// Interfaces the wiring relies on, checked where things meet.
var (
	_ hub.Lines            = (*queue.Queue)(nil)
	_ hub.Passes           = (*queue.Passes)(nil)
	_ hub.Leaver           = (*queue.Scheduler)(nil)
	_ booking.Admissions   = (*queue.Scheduler)(nil)
	_ booking.PassVerifier = (*queue.Passes)(nil)
	_ queue.Screenings     = (*booking.Store)(nil)
)

// run starts the server and serves until ctx ends, then drains. It prints the URL to open on stdout once
// the listener is up, and logs there as JSON.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	configPath := fs.String("config", "config.yaml", "settings file (absent: defaults); every key can be overridden by WAITROOM_<KEY>")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := config.Load(*configPath, explicit, getenv)
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
	store := booking.NewStore(db)
	if cfg.Demo.Enabled {
		if err := seedDemo(ctx, store, log); err != nil {
			return err
		}
	}

	secret := []byte(cfg.Pass.Secret)
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
		log.Warn("pass.secret not set: generated one for this process; passes will not survive a restart (set WAITROOM_PASS_SECRET)")
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(db.DB, "waitroom"))
	q := queue.New(rdb, cfg.Redis.Prefix)
	passes := queue.NewPasses(secret)
	defaults := queue.Settings{
		Interval: cfg.Admission.Interval, BatchSize: cfg.Admission.BatchSize, MaxActive: cfg.Admission.MaxActive,
		ActiveTTL: cfg.Admission.ActiveTTL, LockTTL: cfg.Admission.LockTTL, Grace: cfg.Queue.Grace,
	}
	instance := instanceID()
	metrics := queue.NewMetrics(reg)
	q.SetMetrics(metrics)
	sched := queue.NewScheduler(q, store, defaults, instance, metrics, log)
	// The scheduler stands for the queue where a slot is freed (a reservation, a leave), so it refills at once.
	book := booking.New(store, rdb, cfg.Redis.Prefix, sched, passes, booking.Settings{
		LockWait: cfg.Booking.LockWait, LockLease: cfg.Booking.LockLease, MaxSeats: cfg.Booking.MaxSeats,
		DBTimeout: cfg.Booking.DBTimeout,
	})
	h := hub.New(q, passes, sched, reg, log)
	srv := server.New(server.Deps{
		Queue: q, Store: store, Booking: book, Hub: h, Redis: rdb, Gatherer: reg,
		AllowedOrigins: cfg.HTTP.AllowedOrigins, BenchFloor: cfg.Bench.Floor, Pprof: cfg.Bench.Pprof,
		Scheduler: sched, AdminKey: cfg.Admin.Key, AdmissionDefaults: defaults, Log: log,
		Limits: server.Limits{
			SocketsPerAddress: cfg.Limits.SocketsPerAddress, RegistrationsPerSecond: cfg.Limits.RegistrationsPerSecond,
			RegistrationBurst: cfg.Limits.RegistrationBurst,
		},
		BehindProxy: cfg.HTTP.BehindProxy,
	})
	if cfg.Admin.Key == "" {
		log.Info("admin.key not set: the admin API and control room are off (set WAITROOM_ADMIN_KEY)")
	}

	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTP.Addr, err)
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "waitroom: open %s\n", publicURL(ln.Addr()))
	log.Info("serving", "addr", ln.Addr().String(), "embedded_redis", cfg.Embedded(), "database", db.DriverName())

	// Background work lives until ctx ends; the HTTP server drains first so no request meets a stopped part.
	bg, bgCtx := errgroup.WithContext(context.WithoutCancel(ctx))
	bgCtx, stopBg := context.WithCancel(bgCtx)
	defer stopBg()
	bg.Go(func() error { return sched.Run(bgCtx) })
	bg.Go(func() error { return h.Run(bgCtx) })
	bg.Go(func() error { return report(bgCtx, q, instance, h, log) })
	bg.Go(func() error { return store.KeepWarm(bgCtx, cfg.Database.MinConns, log) })

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		stopBg()
		_ = bg.Wait()
		return fmt.Errorf("serve: %w", err)
	case <-bgCtx.Done():
	}

	log.Info("draining")
	drainCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	srv.StopStreams()
	shutdownErr := httpSrv.Shutdown(drainCtx)
	<-serveErr
	hubErr := h.Shutdown(drainCtx)
	// The sockets' count-offs may still be queued (hub: a drain closes them all at once).
	settleErr := q.Settle(drainCtx)
	stopBg()
	bgErr := bg.Wait()
	return errors.Join(shutdownErr, hubErr, settleErr, bgErr)
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

// reportEvery paces this instance's report of its sockets to the control room.
const reportEvery = time.Second

// report tells the control room this instance's sockets by screening every second until ctx ends.
func report(ctx context.Context, q *queue.Queue, instance string, h *hub.Hub, log *slog.Logger) error {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := q.Report(ctx, instance, h.Counts()); err != nil && ctx.Err() == nil {
				log.Warn("report sockets", "err", err)
			}
		}
	}
}

func instanceID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
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
