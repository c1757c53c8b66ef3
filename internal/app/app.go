// Package app builds one server instance's object graph from its configuration, in one place: the binary
// (Main) and the tests build it the same way (New), and run its background work the same way (Run).
//
// Where things are: app.go (the App, New, Run: the wiring and the background work), main.go (Main: flags,
// configuration, the backends, the listener, the drain), report.go (this instance's report to the control
// room), passes.go (the passes' keys or secret), checkout.go (the start's check that every hold-mode
// screening has somewhere to pay), pow.go (the proof of work's settings and keys, for package entry),
// gate.go (the gate: built, and its listener), demo.go (the playground's second demo screening, demo.line),
// healthcheck.go (`waitroom healthcheck`, the image's probe), reset.go (`waitroom reset-demo`).
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/fairness"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/ids"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/overload"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/server"
	"github.com/waitroom/waitroom/webhook"
)

// beaconTimeout bounds one request to the randomness beacon (fairness.beacon).
const beaconTimeout = 5 * time.Second

// Interfaces the wiring relies on, checked where things meet.
var (
	_ hub.Lines            = (*queue.Queue)(nil)
	_ hub.Passes           = (*pass.Issuer)(nil)
	_ hub.Leaver           = (*queue.Queue)(nil)
	_ booking.Admissions   = (*queue.Queue)(nil)
	_ booking.PassVerifier = (*pass.Issuer)(nil)
	_ queue.Screenings     = (*booking.Store)(nil)
	_ gate.Lines           = (*queue.Queue)(nil)
	_ gate.Passes          = (*pass.Issuer)(nil)
	_ gate.Rooms           = (*booking.Store)(nil)
)

// Backends are the outside services an App works with, opened (and closed) by its caller.
type Backends struct {
	Redis redis.UniversalClient
	// DB is migrated.
	DB  *sqlx.DB
	Log *slog.Logger
}

// App is one server instance's parts, wired.
type App struct {
	Config    config.Config
	Log       *slog.Logger
	Registry  *prometheus.Registry
	Queue     *queue.Queue
	Passes    *pass.Issuer
	Scheduler *queue.Scheduler
	Store     *booking.Store
	Booking   *booking.Booking
	Hub       *hub.Hub
	Server    *server.Server
	// Entry is the admission policy of a new place, for the sockets and the gate (one rules cache).
	Entry *entry.Policy
	// Outbox is the webhooks' outbox; Webhooks delivers from it (nil: webhooks.url is empty, none are sent).
	Outbox   *webhook.Outbox
	Webhooks *webhook.Deliverer
	// Gate is the gate in front of an existing site (nil: gate.upstream is empty); main.go serves it on
	// gate.addr (gate.go).
	Gate *gate.Gate
	// DBGate and Handshakes are the classes of work's gates (package overload): in front of the database
	// pool, and of the sockets' registrations (nil: overload.handshakes is 0, no bound).
	DBGate, Handshakes *overload.Gate
	// Instance names this instance: its admission lock owner and its line in the control room.
	Instance string
	// Fairness is the public admission log (nil: fairness.enabled is off or no fairness.key is set).
	Fairness *fairness.Log
	// Notify is the e-mails to buyers who left the page (not Enabled: notify.smtp_url is not set; its Run
	// then only forgets the addresses of ended sales).
	Notify *notify.Service
}

// New wires an instance configured by cfg over b. cfg.Pass must set keys or a secret (Main draws a key for
// the embedded default). Nothing runs until Run.
func New(cfg config.Config, b Backends) (*App, error) {
	a := &App{Config: cfg, Log: b.Log, Registry: prometheus.NewRegistry(), Instance: instanceID()}
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(b.DB.DB, "waitroom"))
	a.Store = booking.NewStore(b.DB)
	work := overload.NewMetrics(a.Registry)
	o := cfg.Overload
	a.DBGate = overload.NewGate("database", overload.Settings{Size: booking.GateSize(b.DB),
		PaymentRoom: o.PaymentConnections, BuyerRoom: o.BuyerConnections,
		Wait: map[overload.Class]time.Duration{overload.Payment: cfg.Booking.DBTimeout, overload.Buyer: cfg.Booking.DBTimeout,
			overload.Arrival: o.ArrivalWait, overload.Background: cfg.Booking.DBTimeout}}, work)
	a.Store.SetGate(a.DBGate)
	a.Queue = queue.New(b.Redis, cfg.Redis.Prefix)
	if cfg.Fairness.Enabled && cfg.Fairness.Key != "" {
		key, err := fairlog.ParseKey(cfg.Fairness.Key)
		if err != nil {
			return nil, fmt.Errorf("app: fairness.key: %w", err)
		}
		a.Queue.SetLog(true)
		if cfg.Fairness.Beacon != "" {
			beacon, err := fairlog.ParseBeacon(cfg.Fairness.Beacon)
			if err != nil {
				return nil, fmt.Errorf("app: fairness.beacon: %w", err)
			}
			a.Queue.SetBeacon(beacon, &http.Client{Timeout: beaconTimeout}, b.Log)
		}
		a.Fairness = fairness.New(b.DB, a.Queue, key, a.Instance, fairness.NewMetrics(a.Registry), b.Log)
	} else if cfg.Fairness.Enabled {
		b.Log.Warn("fairness.key not set: the admission log is not kept and places get no receipt (docs/admission-log.md)")
	}
	if cfg.Fairness.Beacon != "" && a.Fairness == nil {
		b.Log.Warn("fairness.beacon is set but the admission log is not kept: no seed to mix it into")
	}
	passes, err := newPasses(cfg.Pass, b.Log)
	if err != nil {
		return nil, err
	}
	a.Passes = passes
	defaults := AdmissionDefaults(cfg)
	metrics := queue.NewMetrics(a.Registry)
	a.Queue.SetMetrics(metrics)
	a.Scheduler = queue.NewScheduler(a.Queue, a.Store, defaults, a.Instance, metrics, a.Log)
	// A slot freed by a reservation or a leave wakes the running scheduler through the queue, which refills it
	// at once.
	a.Booking = booking.New(a.Store, a.Queue, a.Queue, a.Passes, booking.Settings{
		LockWait: cfg.Booking.LockWait, LockLease: cfg.Booking.LockLease, MaxSeats: cfg.Booking.MaxSeats,
		DBTimeout: cfg.Booking.DBTimeout, Checkout: cfg.Booking.Checkout, HoldTTL: cfg.Booking.HoldTTL,
		Webhooks: cfg.Webhooks.URL != "", Waitlist: cfg.Booking.Waitlist,
	})
	a.Booking.SetMetrics(booking.NewMetrics(a.Registry))
	a.Scheduler.SetOfferHook(a.offerNews)
	if a.Notify, err = notify.New(b.DB, cfg.Notify.Settings(), notify.NewMetrics(a.Registry), a.Log); err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if a.Notify.Enabled() {
		a.Scheduler.SetAdmitHook(a.notifyAdmitted)
	}
	a.Outbox = webhook.NewOutbox(b.DB)
	if cfg.Webhooks.URL != "" {
		a.Webhooks = webhook.New(a.Outbox, webhook.Settings{URL: cfg.Webhooks.URL, Secret: cfg.Webhooks.Secret},
			webhook.NewMetrics(a.Registry), a.Log)
	}
	a.Hub = hub.New(a.Queue, a.Passes, a.Queue, a.Registry, a.Log)
	a.Hub.SetRankInterval(cfg.Hub.RankInterval)
	if a.Fairness != nil {
		a.Hub.SetReceipts(a.Fairness)
	}
	if o.Handshakes > 0 {
		a.Handshakes = overload.NewGate("handshake", overload.Settings{Size: o.Handshakes,
			Wait: map[overload.Class]time.Duration{overload.Arrival: o.HandshakeWait}}, work)
		a.Hub.SetHandshakes(a.Handshakes, o.RetryAfter)
	}
	pow, err := PowSettings(cfg)
	if err != nil {
		return nil, err
	}
	a.Entry = entry.New(entry.Deps{Lines: a.Queue, Store: a.Store, Pow: pow, Registerer: a.Registry, Log: a.Log,
		Bots: entry.Bots{InfiniteQueue: cfg.Bots.InfiniteQueue, FailureLimit: cfg.Bots.FailureLimit, Hold: cfg.Bots.Hold,
			MaxHeld: cfg.Bots.MaxHeld},
		WrongCodesPerMinute: cfg.Limits.WrongCodesPerMinute})
	// One pace of new places per client address on this instance, for the sockets and the gate's JSON answers.
	registrations := limit.NewRate(cfg.Limits.RegistrationsPerSecond, cfg.Limits.RegistrationBurst)
	var gateLinks server.GateLinks
	if a.Gate, gateLinks, err = a.newGate(cfg, registrations); err != nil {
		return nil, err
	}
	a.Server = server.New(server.Deps{
		Queue: a.Queue, Store: a.Store, Booking: a.Booking, Hub: a.Hub, Redis: b.Redis, Gatherer: a.Registry, Registerer: a.Registry,
		AllowedOrigins: cfg.HTTP.AllowedOrigins, BenchFloor: cfg.Bench.Floor, Pprof: cfg.Bench.Pprof, TrustedProxies: trustedProxies(cfg.HTTP),
		Scheduler: a.Scheduler, AdminKey: cfg.Admin.Key, AdmissionDefaults: defaults, Log: a.Log,
		Limits: server.Limits{
			SocketsPerAddress: cfg.Limits.SocketsPerAddress, RegistrationsPerSecond: cfg.Limits.RegistrationsPerSecond,
			RegistrationBurst: cfg.Limits.RegistrationBurst, Registrations: registrations,
			OrdersPerSecond: cfg.Limits.OrdersPerSecond, OrdersBurst: cfg.Limits.OrdersBurst,
		},
		BehindProxy: cfg.HTTP.BehindProxy,
		Checkout:    server.Checkout{URL: cfg.Booking.CheckoutURL, Demo: cfg.Booking.DemoCheckout, ConfirmKey: cfg.Booking.ConfirmKey},
		Webhooks:    a.Outbox,
		PassKeys:    a.Passes,
		Gate:        gateLinks,
		Entry:       a.Entry,
		RetryAfter:  cfg.Overload.RetryAfter,
		Fairness:    a.Fairness,
		Notify:      a.Notify,
		NotifyLines: a.Queue,
	})
	return a, nil
}

// AdmissionDefaults are the admission settings a screening leaves unset (admission.*, queue.grace).
func AdmissionDefaults(cfg config.Config) queue.Settings {
	return queue.Settings{
		Interval: cfg.Admission.Interval, BatchSize: cfg.Admission.BatchSize, MaxActive: cfg.Admission.MaxActive,
		ActiveTTL: cfg.Admission.ActiveTTL, LockTTL: cfg.Admission.LockTTL, Grace: cfg.Queue.Grace,
		OfferTTL: cfg.Booking.OfferTTL,
	}
}

// Run does the instance's background work until ctx ends, and returns once all of it has stopped: the
// admission scheduler, the hub (its writers, pinger, Redis watch, trimmer and followers), the report of
// this instance's sockets to the control room, the warmth of the database pool, the sweeper of lapsed holds,
// and the webhooks' deliverer (when webhooks.url is set). Drain the HTTP server and the hub (Hub.Shutdown)
// before ending ctx.
func (a *App) Run(ctx context.Context) error {
	bg, ctx := errgroup.WithContext(ctx)
	bg.Go(func() error { return a.Scheduler.Run(ctx) })
	bg.Go(func() error { return a.Hub.Run(ctx) })
	bg.Go(func() error { return a.report(ctx) })
	bg.Go(func() error { return a.Store.KeepWarm(ctx, a.Config.Database.MinConns, a.Log) })
	bg.Go(func() error { return a.Booking.Run(ctx, a.Log) })
	if a.Webhooks != nil {
		bg.Go(func() error { return a.Webhooks.Run(ctx) })
	}
	if a.Fairness != nil {
		bg.Go(func() error { return a.Fairness.Run(ctx, a.Store) })
	}
	bg.Go(func() error { return a.Notify.Run(ctx) })
	return bg.Wait()
}

func instanceID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), ids.New()[:8])
}
