// Package config owns the server's settings: the defaults (the seed's), config.yaml on top of them, and an
// environment override for every key (key `a.b_c` is read from WAITROOM_A_B_C). It guarantees a Config that
// passed Validate or an error that names the key at fault.
//
// Files: config.go (the settings, their defaults, the file and the environment), validate.go (the checks of
// the listeners', the gate's and the webhooks' settings), booking.go (the checks of where buyers pay),
// bots.go (the settings against bots: proof of work, codes' limits, the infinite queue), passkeys.go (the
// pass keys read and checked, by package pass's parser), notify.go (the e-mails to buyers who left the
// page).
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"

	"github.com/waitroom/waitroom/fairlog"
)

// EnvPrefix starts the name of every environment override.
const EnvPrefix = "WAITROOM_"

// Config is every setting of one server instance.
type Config struct {
	HTTP      HTTP      `koanf:"http"`
	Redis     Redis     `koanf:"redis"`
	Database  Database  `koanf:"database"`
	Pass      Pass      `koanf:"pass"`
	Admission Admission `koanf:"admission"`
	Queue     Queue     `koanf:"queue"`
	Hub       Hub       `koanf:"hub"`
	Overload  Overload  `koanf:"overload"`
	Limits    Limits    `koanf:"limits"`
	Admin     Admin     `koanf:"admin"`
	Booking   Booking   `koanf:"booking"`
	Demo      Demo      `koanf:"demo"`
	Data      Data      `koanf:"data"`
	Log       Log       `koanf:"log"`
	Bench     Bench     `koanf:"bench"`
	Webhooks  Webhooks  `koanf:"webhooks"`
	Gate      Gate      `koanf:"gate"`
	Pow       Pow       `koanf:"pow"`
	Bots      Bots      `koanf:"bots"`
	Fairness  Fairness  `koanf:"fairness"`
	Notify    Notify    `koanf:"notify"`
}

// Fairness is the public admission log (docs/admission-log.md): every change of a line recorded, signed
// and served, and a signed receipt for every place.
type Fairness struct {
	// Enabled keeps the log. It needs Key; the embedded default draws one when none is set.
	Enabled bool `koanf:"enabled"`
	// Key signs the log's checkpoints and the receipts: "kid:base64 of the 32-byte Ed25519 seed", the
	// same on every instance behind one Redis.
	Key string `koanf:"key"`
	// Beacon is a drand beacon's HTTP base URL ending in its chain hash ("https://api.drand.sh/<chain
	// hash>"), whose round due at the sale time is mixed into each pre-queue's seed; empty: none.
	Beacon string `koanf:"beacon"`
}

// Gate puts the waiting room in front of an existing site: a listener of its own that proxies to the
// origin, letting a protected path through only with an admission's cookie.
type Gate struct {
	// Upstream is the origin's URL (http(s)://host[:port]); empty: the gate is off.
	Upstream string `koanf:"upstream"`
	// Addr is the gate's own listener, the address the site's visitors reach.
	Addr string `koanf:"addr"`
	// Paths are the protected path prefixes, each "prefix=room": the room is a screening id whose line the
	// visitors of that prefix wait in ("/checkout=shop"). "prefix=room;cache" keeps the origin's caching
	// headers on the prefix's answers, which the gate otherwise marks private (GatePaths).
	Paths []string `koanf:"paths"`
	// RoomURL is the waiting room's public base URL (where /s/{room} is served); empty: the gate's own host
	// on the port of http.addr.
	RoomURL string `koanf:"room_url"`
	// PublicURL is the gate's own public base URL (where the room page posts /.waitroom/enter); empty: the
	// room page's host on the port of gate.addr, same scheme.
	PublicURL string `koanf:"public_url"`
	// Mode is how a room without a mode of its own admits: auto (straight through while the room has
	// space, the line once it is full), queue_all (everyone waits) or passthrough (the room is off).
	Mode string `koanf:"mode"`
	// SiteName is what the waiting page calls the site behind the gate ("You are in line for {site_name}")
	// and its link back to the site; empty: the gate's host. One gate stands in front of one site.
	SiteName string `koanf:"site_name"`
}

// MaxSiteNameBytes bounds gate.site_name: a name, not a paragraph.
const MaxSiteNameBytes = 100

// GateModes are the values of gate.mode.
var GateModes = []string{"auto", "queue_all", "passthrough"}

// Webhooks is where every order transition is posted, signed as the Standard Webhooks specification says.
type Webhooks struct {
	// URL receives the webhooks; empty: none are written or sent.
	URL string `koanf:"url"`
	// Secret signs them: "whsec_" and the base64 of 24 to 64 random bytes.
	Secret string `koanf:"secret"`
}

// Bench switches on what only a benchmark needs.
type Bench struct {
	// Floor adds POST /api/bench/floor, which answers 409 at once and does nothing else: the cost of the
	// HTTP round trip alone, measured beside the reservation path (make bench-booking).
	Floor bool `koanf:"floor"`
	// Pprof serves Go's profiler at /debug/pprof/ (CPU, heap, goroutines), to find where a load test's time
	// and memory go. Off by default: it exposes internals.
	Pprof bool `koanf:"pprof"`
}

// Log sets what the server logs (JSON lines on stdout).
type Log struct {
	// Level is debug, info, warn or error.
	Level string `koanf:"level"`
}

// HTTP is the listener and the browsers it accepts sockets from.
type HTTP struct {
	Addr string `koanf:"addr"`
	// AllowedOrigins lists the extra origins (scheme://host[:port]) whose pages may open a socket; the
	// server's own origin is always allowed. "*" allows any.
	AllowedOrigins []string `koanf:"allowed_origins"`
	// BehindProxy takes a client's address from X-Forwarded-For (believed only from one of TrustedProxies)
	// for the per-address limits; otherwise it is the TCP peer.
	BehindProxy bool `koanf:"behind_proxy"`
	// TrustedProxies are the proxies (CIDR ranges or single addresses) whose X-Forwarded-For is believed
	// with behind_proxy; the client is the right-most address of the chain that is not one of them.
	TrustedProxies []string `koanf:"trusted_proxies"`
	// ReadTimeout bounds reading a whole request, its body included; WriteTimeout, writing its answer;
	// IdleTimeout, a keep-alive connection between requests. The socket upgrade and the control room's
	// stream set their own deadlines.
	ReadTimeout  time.Duration `koanf:"read_timeout"`
	WriteTimeout time.Duration `koanf:"write_timeout"`
	IdleTimeout  time.Duration `koanf:"idle_timeout"`
	// MaxHeaderBytes bounds a request's header.
	MaxHeaderBytes int `koanf:"max_header_bytes"`
	// OpsAddr is the operators' listener: /metrics, and /debug/pprof/ with bench.pprof. Loopback by
	// default; empty: not served.
	OpsAddr string `koanf:"ops_addr"`
}

// Redis selects the shared Redis. An empty Addr runs an in-process Redis (miniredis) for one instance.
type Redis struct {
	// Addr is host:port, or several comma-separated nodes of a Redis Cluster.
	Addr string `koanf:"addr"`
	// Cluster says Addr is a Redis Cluster even when it names one node (several nodes always mean one).
	Cluster bool `koanf:"cluster"`
	// Prefix starts every key the server writes, so several deployments (or tests) share one Redis.
	Prefix string `koanf:"prefix"`
}

// Database selects the SQL store. An empty URL uses an SQLite file under data.dir.
type Database struct {
	URL string `koanf:"url"`
	// MinConns connections of the pool are opened at start and kept open (capped at the pool's size, 30;
	// SQLite's is 1), so a sale's first transactions do not wait for PostgreSQL to start a backend each.
	// 0: open on demand only.
	MinConns int `koanf:"min_conns"`
}

// Pass holds the keys that sign admission passes; every instance behind one Redis must share them.
type Pass struct {
	// Keys are Ed25519 keys, each "kid:base64 of the 32-byte seed": the first signs (EdDSA), all verify,
	// and their public halves are published at /.well-known/jwks.json.
	Keys []string `koanf:"keys"`
	// KeysFile names a file of more such keys, one per line (blank lines and # comments skipped), read
	// after Keys.
	KeysFile string `koanf:"keys_file"`
	// Secret signs HS256 passes, for deployments that set no keys (at least 32 characters).
	Secret string `koanf:"secret"`
}

// Admission is the pace the scheduler sets (the seed's defaults).
type Admission struct {
	Interval  time.Duration `koanf:"interval"`
	BatchSize int           `koanf:"batch_size"`
	MaxActive int           `koanf:"max_active"`
	ActiveTTL time.Duration `koanf:"active_ttl"`
	LockTTL   time.Duration `koanf:"lock_ttl"`
}

// Queue is how the line treats who waits.
type Queue struct {
	// Grace is how long a waiting user's socket may be gone (a refresh, a tunnel) before the user leaves
	// the line as abandoned, so no admission is spent on them; reconnecting within it keeps the place.
	Grace time.Duration `koanf:"grace"`
}

// Hub is how an instance talks to its sockets.
type Hub struct {
	// RankInterval is the least time between two rank pushes to a screening's waiting sockets: an event
	// within it (a refill after a purchase, a leave) is pushed at its end, with the rank in the newest line.
	// Admissions are never delayed. 0 pushes after every event.
	RankInterval time.Duration `koanf:"rank_interval"`
}

// Overload sets the classes of work, served in order when the server is saturated: the payment backend's
// confirm and a buyer's cancel, then admitted buyers, then arriving sockets, then what only watches
// (docs/operations.md, "Classes of work").
type Overload struct {
	// PaymentConnections of the database pool's are kept for the confirms and cancels: no other class takes
	// the last ones.
	PaymentConnections int `koanf:"payment_connections"`
	// BuyerConnections more are kept for admitted buyers (and the payments): arrivals and background work
	// share the rest.
	BuyerConnections int `koanf:"buyer_connections"`
	// ArrivalWait bounds an arriving socket's wait for a database connection before it is told to retry.
	ArrivalWait time.Duration `koanf:"arrival_wait"`
	// Handshakes bounds the sockets an instance registers at once (from the hello to the first message); 0:
	// no bound.
	Handshakes int `koanf:"handshakes"`
	// HandshakeWait bounds a socket's wait for one of those before it is told to retry (close 1013).
	HandshakeWait time.Duration `koanf:"handshake_wait"`
	// RetryAfter is how long a refused request (503) or socket (1013) is told to wait before it retries.
	RetryAfter time.Duration `koanf:"retry_after"`
}

// Limits bounds what one client address may hold and open on one instance (0 turns a limit off). They are
// generous by default so that many users behind one NAT or office address still get in.
type Limits struct {
	SocketsPerAddress      int     `koanf:"sockets_per_address"`
	RegistrationsPerSecond float64 `koanf:"registrations_per_second"`
	RegistrationBurst      int     `koanf:"registration_burst"`
	// WrongCodesPerMinute is how many refused access codes one address may try a minute, in bursts of as
	// many; past it the address's sockets are held (bots.infinite_queue) or refused RATE_LIMITED without
	// trying their code, whether or not they brought a proof of work.
	WrongCodesPerMinute int `koanf:"wrong_codes_per_minute"`
	// OrdersPerSecond and OrdersBurst pace one address's requests to an order's routes (its JSON, its
	// ticket page and QR code, the buyer's cancel, the demo checkout; not the payment backend's confirm).
	OrdersPerSecond float64 `koanf:"orders_per_second"`
	OrdersBurst     int     `koanf:"orders_burst"`
}

// Admin guards the operator's API and control room.
type Admin struct {
	// Key is the bearer key of /api/admin/… (at least 16 characters). Empty: the admin API is off.
	Key string `koanf:"key"`
}

// Booking bounds a reservation.
type Booking struct {
	LockWait  time.Duration `koanf:"lock_wait"`
	LockLease time.Duration `koanf:"lock_lease"`
	MaxSeats  int           `koanf:"max_seats"`
	// DBTimeout bounds a reservation's database statements before its commit, and any request's wait for a
	// database connection (overload.arrival_wait an arriving socket's): a slow database answers 503.
	DBTimeout time.Duration `koanf:"db_timeout"`
	// Checkout is "instant" (an order is confirmed as it is made) or "hold" (it holds its seats for
	// HoldTTL until it is confirmed), for the screenings without a mode of their own.
	Checkout string        `koanf:"checkout"`
	HoldTTL  time.Duration `koanf:"hold_ttl"`
	// Waitlist keeps a sold-out screening's line as its waitlist, for the screenings without a setting of
	// their own: seats that come back are offered to the waiting in their order (docs/protocol.md 5.4).
	Waitlist bool `koanf:"waitlist"`
	// OfferTTL is how long a waitlist's offer lasts before it passes to the next.
	OfferTTL time.Duration `koanf:"offer_ttl"`
	// CheckoutURL is where a buyer pays for a held order, with {code} for its code. Hold mode needs it, or
	// DemoCheckout.
	CheckoutURL string `koanf:"checkout_url"`
	// DemoCheckout serves the server's own demo checkout page (/checkout/{code}), whose Pay button confirms
	// a held order with no payment and no key: for `make run` and demos, never beside a confirm key or a
	// checkout URL.
	DemoCheckout bool `koanf:"demo_checkout"`
	// ConfirmKey is the bearer key of the payment backend's confirm call; empty: that call is off.
	ConfirmKey string `koanf:"confirm_key"`
}

// Demo seeds screenings a newcomer can try at once.
type Demo struct {
	// Enabled seeds `demo`: 100 seats at the server's admission pace, fast enough for the README's load test.
	Enabled bool `koanf:"enabled"`
	// Line seeds `demo-line` too: 100 seats admitted one a tick, two choosing at once, so that a few
	// browser tabs see the line move (make run turns it on). Off by default: a real deployment lists only
	// its own screenings.
	Line bool `koanf:"line"`
}

// Data is where the embedded default keeps its SQLite file.
type Data struct {
	Dir string `koanf:"dir"`
}

// Default returns the seed's settings.
func Default() Config {
	return Config{
		HTTP: HTTP{Addr: ":8080", AllowedOrigins: []string{}, TrustedProxies: []string{}, ReadTimeout: 15 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, OpsAddr: "127.0.0.1:9180"},
		Pass:      Pass{Keys: []string{}},
		Gate:      Gate{Addr: ":8081", Paths: []string{}, Mode: "auto"},
		Pow:       Pow{Iterations: 1000, Expires: 5 * time.Minute},
		Bots:      Bots{FailureLimit: 5, Hold: 10 * time.Minute, MaxHeld: 2000},
		Fairness:  Fairness{Enabled: true},
		Notify:    DefaultNotify(),
		Redis:     Redis{Prefix: "wr:"},
		Admission: Admission{Interval: 5 * time.Second, BatchSize: 10, MaxActive: 100, ActiveTTL: 5 * time.Minute, LockTTL: 10 * time.Second},
		Queue:     Queue{Grace: 2 * time.Minute},
		Hub:       Hub{RankInterval: 250 * time.Millisecond},
		Overload: Overload{PaymentConnections: 4, BuyerConnections: 6, ArrivalWait: time.Second, Handshakes: 256,
			HandshakeWait: 2 * time.Second, RetryAfter: time.Second},
		Limits: Limits{SocketsPerAddress: 5000, RegistrationsPerSecond: 100, RegistrationBurst: 1000, WrongCodesPerMinute: 10,
			OrdersPerSecond: 20, OrdersBurst: 100},
		Booking: Booking{LockWait: 3 * time.Second, LockLease: 10 * time.Second, MaxSeats: 4, DBTimeout: 5 * time.Second,
			Checkout: "instant", HoldTTL: 10 * time.Minute, OfferTTL: 10 * time.Minute},
		Database: Database{MinConns: 10},
		Demo:     Demo{Enabled: true},
		Data:     Data{Dir: "data"},
		Log:      Log{Level: "info"},
	}
}

// maxRankInterval bounds hub.rank_interval: a waiting user's rank is never older than this.
const maxRankInterval = 5 * time.Second

// Load reads the defaults, then path (skipped when path is empty, or is the default file and absent), then
// the environment through getenv.
func Load(path string, required bool, getenv func(string) string) (Config, error) {
	k := koanf.New(".")
	if err := k.Load(structs.Provider(Default(), "koanf"), nil); err != nil {
		return Config{}, fmt.Errorf("config: defaults: %w", err)
	}
	if path != "" {
		if _, err := os.Stat(path); err == nil || required {
			if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
				return Config{}, fmt.Errorf("config: read %s: %w", path, err)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Config{}, fmt.Errorf("config: read %s: %w", path, err)
		}
	}
	overrides := map[string]any{}
	for _, key := range k.Keys() {
		if v := getenv(EnvName(key)); v != "" {
			overrides[key] = v
		}
	}
	if err := k.Load(confmap.Provider(overrides, "."), nil); err != nil {
		return Config{}, fmt.Errorf("config: environment: %w", err)
	}
	var c Config
	err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
		),
		Metadata:         nil,
		Result:           &c,
		WeaklyTypedInput: true,
		TagName:          "koanf",
	}})
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	for _, list := range [][]string{c.HTTP.AllowedOrigins, c.HTTP.TrustedProxies, c.Pass.Keys, c.Gate.Paths} {
		for i, o := range list {
			list[i] = strings.TrimSpace(o)
		}
	}
	return c, c.Validate()
}

// EnvName is the environment variable that overrides key: "admission.max_active" → WAITROOM_ADMISSION_MAX_ACTIVE.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Embedded reports whether the server runs without outside services.
func (c Config) Embedded() bool { return c.Redis.Addr == "" }

// RedisAddrs splits redis.addr into its nodes, without blanks.
func (c Config) RedisAddrs() []string {
	var out []string
	for _, a := range strings.Split(c.Redis.Addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Validate names the first setting that cannot work.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.Notify.Validate()...)
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", key, d))
		}
	}
	atLeastOne := func(key string, n int) {
		if n < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", key, n))
		}
	}
	if c.HTTP.Addr == "" {
		errs = append(errs, errors.New("http.addr is empty"))
	}
	if strings.ContainsAny(c.Redis.Prefix, "{}") {
		errs = append(errs, fmt.Errorf("redis.prefix %q must not contain braces (they are the cluster hash tag)", c.Redis.Prefix))
	}
	positive("admission.interval", c.Admission.Interval)
	positive("admission.active_ttl", c.Admission.ActiveTTL)
	positive("admission.lock_ttl", c.Admission.LockTTL)
	atLeastOne("admission.batch_size", c.Admission.BatchSize)
	atLeastOne("admission.max_active", c.Admission.MaxActive)
	positive("queue.grace", c.Queue.Grace)
	if c.Hub.RankInterval < 0 || c.Hub.RankInterval > maxRankInterval {
		errs = append(errs, fmt.Errorf("hub.rank_interval must be between 0 (every event) and %v, got %v", maxRankInterval, c.Hub.RankInterval))
	}
	if o := c.Overload; o.PaymentConnections < 0 || o.BuyerConnections < 0 || o.Handshakes < 0 || o.ArrivalWait < 0 || o.HandshakeWait < 0 {
		errs = append(errs, errors.New("overload.* must not be negative"))
	}
	if c.Overload.Handshakes > 0 && c.Overload.HandshakeWait <= 0 {
		errs = append(errs, errors.New("overload.handshake_wait must be positive when overload.handshakes bounds the handshakes"))
	}
	if c.Overload.ArrivalWait <= 0 {
		errs = append(errs, errors.New("overload.arrival_wait must be positive: an arriving socket's wait for the database is bounded"))
	}
	if c.Overload.RetryAfter < time.Second || c.Overload.RetryAfter > time.Minute {
		errs = append(errs, fmt.Errorf("overload.retry_after must be between 1s and 1m (Retry-After counts whole seconds), got %v", c.Overload.RetryAfter))
	}
	if c.Limits.SocketsPerAddress < 0 || c.Limits.RegistrationsPerSecond < 0 || c.Limits.RegistrationBurst < 0 ||
		c.Limits.WrongCodesPerMinute < 0 || c.Limits.OrdersPerSecond < 0 || c.Limits.OrdersBurst < 0 {
		errs = append(errs, errors.New("limits.* must not be negative (0 turns a limit off)"))
	}
	if c.Limits.RegistrationsPerSecond > 0 && c.Limits.RegistrationBurst < 1 {
		errs = append(errs, errors.New("limits.registration_burst must be at least 1 when limits.registrations_per_second is set"))
	}
	if c.Limits.OrdersPerSecond > 0 && c.Limits.OrdersBurst < 1 {
		errs = append(errs, errors.New("limits.orders_burst must be at least 1 when limits.orders_per_second is set"))
	}
	if c.Admin.Key != "" && len(c.Admin.Key) < 16 {
		errs = append(errs, fmt.Errorf("admin.key must be at least 16 characters, got %d", len(c.Admin.Key)))
	}
	positive("booking.lock_wait", c.Booking.LockWait)
	positive("booking.lock_lease", c.Booking.LockLease)
	positive("booking.db_timeout", c.Booking.DBTimeout)
	atLeastOne("booking.max_seats", c.Booking.MaxSeats)
	positive("booking.hold_ttl", c.Booking.HoldTTL)
	positive("booking.offer_ttl", c.Booking.OfferTTL)
	if c.Booking.Checkout != "instant" && c.Booking.Checkout != "hold" {
		errs = append(errs, fmt.Errorf("booking.checkout %q: want instant or hold", c.Booking.Checkout))
	}
	errs = append(errs, c.Booking.validateCheckout()...)
	if u := c.Booking.CheckoutURL; u != "" && (!strings.Contains(u, "{code}") || !(strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://"))) {
		errs = append(errs, fmt.Errorf("booking.checkout_url %q: want an http(s) URL with {code} in it", u))
	}
	if c.Booking.ConfirmKey != "" && len(c.Booking.ConfirmKey) < 16 {
		errs = append(errs, fmt.Errorf("booking.confirm_key must be at least 16 characters, got %d", len(c.Booking.ConfirmKey)))
	}
	if c.Booking.ConfirmKey != "" && c.Booking.ConfirmKey == c.Admin.Key {
		errs = append(errs, errors.New("booking.confirm_key must not be the admin key: the payment backend needs no operator's power"))
	}
	if c.Database.MinConns < 0 {
		errs = append(errs, fmt.Errorf("database.min_conns must not be negative (0 opens connections on demand only), got %d", c.Database.MinConns))
	}
	if !c.Embedded() && c.Pass.Secret == "" && len(c.Pass.Keys) == 0 && c.Pass.KeysFile == "" {
		errs = append(errs, errors.New("pass.keys (or pass.secret) is required with a shared Redis (every instance must sign and check passes with the same keys); set WAITROOM_PASS_KEYS"))
	}
	if c.Pass.Secret != "" && len(c.Pass.Secret) < 32 {
		errs = append(errs, fmt.Errorf("pass.secret must be at least 32 characters, got %d", len(c.Pass.Secret)))
	}
	errs = append(errs, c.Pass.validate()...)
	if c.Fairness.Key != "" {
		if _, err := fairlog.ParseKey(c.Fairness.Key); err != nil {
			errs = append(errs, fmt.Errorf("fairness.key: %w", err))
		}
	}
	if c.Fairness.Beacon != "" {
		if _, err := fairlog.ParseBeacon(c.Fairness.Beacon); err != nil {
			errs = append(errs, fmt.Errorf("fairness.beacon: %w", err))
		}
	}
	errs = append(errs, c.HTTP.validate()...)
	errs = append(errs, c.Gate.validate()...)
	errs = append(errs, c.Webhooks.validate()...)
	errs = append(errs, c.Pow.validate()...)
	errs = append(errs, c.Bots.validate()...)
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level %q: want debug, info, warn or error", c.Log.Level))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
