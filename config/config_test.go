package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestDefaultsAreTheSeeds(t *testing.T) {
	c, err := Load("", false, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load with nothing = %+v, want %+v", c, want)
	}
	a := c.Admission
	if a.Interval != 5*time.Second || a.BatchSize != 10 || a.MaxActive != 100 || a.ActiveTTL != 5*time.Minute || a.LockTTL != 10*time.Second {
		t.Errorf("admission defaults = %+v, want the seed's 5s/10/100/5m/10s", a)
	}
	if !c.Embedded() {
		t.Error("Embedded() = false with no redis.addr, want true")
	}
}

// The shipped config.yaml documents the defaults: loading it must change nothing.
func TestShippedConfigFileEqualsDefaults(t *testing.T) {
	c, err := Load(filepath.Join("..", "config.yaml"), true, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(); !reflect.DeepEqual(c, want) {
		t.Errorf("config.yaml = %+v, want the defaults %+v", c, want)
	}
}

func TestFileThenEnvironmentOverride(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	yaml := "admission:\n  interval: 2s\n  batch_size: 50\nhttp:\n  allowed_origins: [\"https://a.example\"]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, true, env(map[string]string{
		"WAITROOM_ADMISSION_MAX_ACTIVE": "500",
		"WAITROOM_ADMISSION_BATCH_SIZE": "70",
		"WAITROOM_BOOKING_LOCK_WAIT":    "250ms",
		"WAITROOM_HTTP_ALLOWED_ORIGINS": "https://b.example, https://c.example",
		"WAITROOM_DEMO_ENABLED":         "false",
		"WAITROOM_REDIS_ADDR":           "127.0.0.1:6379",
		"WAITROOM_PASS_SECRET":          strings.Repeat("s", 32),
		"WAITROOM_NOT_A_KEY":            "ignored",
		"WAITROOM_ADMISSION_ACTIVE_TTL": "90s",
		"WAITROOM_DATABASE_URL":         "postgres://x@127.0.0.1/db",
		"WAITROOM_HTTP_ADDR":            "127.0.0.1:0",
		"WAITROOM_ADMISSION_LOCK_TTL":   "",
		"WAITROOM_BOOKING_MAX_SEATS":    "2",
		"WAITROOM_REDIS_PREFIX":         "x:",
		"WAITROOM_LOG_LEVEL":            "debug",
		"WAITROOM_DATA_DIR":             "/tmp/d",
		"WAITROOM_BOOKING_LOCK_LEASE":   "1s",
		"WAITROOM_ADMISSION_INTERVAL":   "", // empty: the file's value stands
	}))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"admission.interval (file)", c.Admission.Interval, 2 * time.Second},
		{"admission.batch_size (env over file)", c.Admission.BatchSize, 70},
		{"admission.max_active (env)", c.Admission.MaxActive, 500},
		{"admission.active_ttl (env)", c.Admission.ActiveTTL, 90 * time.Second},
		{"admission.lock_ttl (default)", c.Admission.LockTTL, 10 * time.Second},
		{"booking.lock_wait", c.Booking.LockWait, 250 * time.Millisecond},
		{"booking.lock_lease", c.Booking.LockLease, time.Second},
		{"booking.max_seats", c.Booking.MaxSeats, 2},
		{"http.allowed_origins", c.HTTP.AllowedOrigins, []string{"https://b.example", "https://c.example"}},
		{"http.addr", c.HTTP.Addr, "127.0.0.1:0"},
		{"demo.enabled", c.Demo.Enabled, false},
		{"redis.addr", c.Redis.Addr, "127.0.0.1:6379"},
		{"redis.prefix", c.Redis.Prefix, "x:"},
		{"database.url", c.Database.URL, "postgres://x@127.0.0.1/db"},
		{"data.dir", c.Data.Dir, "/tmp/d"},
		{"log.level", c.Log.Level, "debug"},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
}

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"admission.max_active": "WAITROOM_ADMISSION_MAX_ACTIVE",
		"http.addr":            "WAITROOM_HTTP_ADDR",
		"redis.addr":           "WAITROOM_REDIS_ADDR",
	} {
		if got := EnvName(key); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestBadSettingsNameTheKey(t *testing.T) {
	cases := []struct {
		vars    map[string]string
		wantKey string
	}{
		{map[string]string{"WAITROOM_REDIS_ADDR": "127.0.0.1:6379"}, "pass.secret"},
		{map[string]string{"WAITROOM_PASS_SECRET": "short"}, "pass.secret"},
		{map[string]string{"WAITROOM_ADMISSION_BATCH_SIZE": "0"}, "admission.batch_size"},
		{map[string]string{"WAITROOM_ADMISSION_MAX_ACTIVE": "-1"}, "admission.max_active"},
		{map[string]string{"WAITROOM_ADMISSION_INTERVAL": "0s"}, "admission.interval"},
		{map[string]string{"WAITROOM_ADMISSION_INTERVAL": "soon"}, "interval"},
		{map[string]string{"WAITROOM_BOOKING_MAX_SEATS": "lots"}, "max_seats"},
		{map[string]string{"WAITROOM_REDIS_PREFIX": "a{b}"}, "redis.prefix"},
		{map[string]string{"WAITROOM_LOG_LEVEL": "loud"}, "log.level"},
		{map[string]string{"WAITROOM_DATABASE_MIN_CONNS": "-1"}, "database.min_conns"},
		{map[string]string{"WAITROOM_LIMITS_ORDERS_PER_SECOND": "-1"}, "limits.*"},
		{map[string]string{"WAITROOM_LIMITS_ORDERS_BURST": "0"}, "limits.orders_burst"},
		{map[string]string{"WAITROOM_LIMITS_ORDERS_BURST": "0", "WAITROOM_LIMITS_ORDERS_PER_SECOND": "0"}, ""},
		{map[string]string{"WAITROOM_POW_COST": "-1"}, "pow.cost"},
		{map[string]string{"WAITROOM_POW_ITERATIONS": "0"}, "pow.iterations"},
		{map[string]string{"WAITROOM_POW_EXPIRES": "1s"}, "pow.expires"},
		{map[string]string{"WAITROOM_POW_SECRET": "short"}, "pow.secret"},
		{map[string]string{"WAITROOM_BOTS_FAILURE_LIMIT": "0"}, "bots.failure_limit"},
		{map[string]string{"WAITROOM_BOTS_HOLD": "0s"}, "bots.hold"},
		{map[string]string{"WAITROOM_BOTS_MAX_HELD": "-1"}, "bots.max_held"},
		{map[string]string{"WAITROOM_POW_COST": "5000", "WAITROOM_BOTS_INFINITE_QUEUE": "true"}, ""},
		{map[string]string{"WAITROOM_HTTP_ADDR": ""}, ""}, // empty means "not set": the default stands
	}
	for _, tc := range cases {
		_, err := Load("", false, env(tc.vars))
		if tc.wantKey == "" {
			if err != nil {
				t.Errorf("Load(%v) = %v, want no error", tc.vars, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantKey) {
			t.Errorf("Load(%v) error = %v, want one naming %s", tc.vars, err, tc.wantKey)
		}
	}
}

func TestMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	if _, err := Load(missing, false, env(nil)); err != nil {
		t.Errorf("Load(absent default file) = %v, want the defaults", err)
	}
	if _, err := Load(missing, true, env(nil)); err == nil {
		t.Error("Load(absent file named on the command line) = nil error, want one")
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(bad, []byte("admission: [oops"), 0o600)
	if _, err := Load(bad, true, env(nil)); err == nil {
		t.Error("Load(malformed YAML) = nil error, want one")
	}
}
