// Tests of the in-process Redis: its password keeps out every client that does not know it, and the
// server keeps working for the one that does.

package embedded_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/embedded"
)

// start runs an in-process Redis until the test ends.
func start(t *testing.T) *embedded.Redis {
	t.Helper()
	m, err := embedded.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestRedisRefusesAClientWithoutThePassword: a local client that does not know the password can neither
// write to the active set (admit itself) nor read what is there; each command is refused with NOAUTH.
func TestRedisRefusesAClientWithoutThePassword(t *testing.T) {
	m := start(t)
	owner := redis.NewClient(&redis.Options{Addr: m.Addr(), Password: m.Password()})
	t.Cleanup(func() { owner.Close() })
	ctx := t.Context()
	if err := owner.ZAdd(ctx, "{demo}:active", redis.Z{Score: 1, Member: "owner"}).Err(); err != nil {
		t.Fatalf("ZADD with the password = %v, want it done", err)
	}

	intruder := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { intruder.Close() })
	err := intruder.ZAdd(ctx, "{demo}:active", redis.Z{Score: 2, Member: "intruder"}).Err()
	if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("ZADD without the password = %v, want NOAUTH", err)
	}
	if got, err := intruder.ZRange(ctx, "{demo}:active", 0, -1).Result(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("ZRANGE without the password = %v, %v; want NOAUTH", got, err)
	}
	wrong := redis.NewClient(&redis.Options{Addr: m.Addr(), Password: "guess", MaxRetries: -1})
	t.Cleanup(func() { wrong.Close() })
	if err := wrong.Ping(ctx).Err(); err == nil {
		t.Error("PING with a wrong password = nil, want it refused")
	}

	got, err := owner.ZRange(ctx, "{demo}:active", 0, -1).Result()
	if err != nil || len(got) != 1 || got[0] != "owner" {
		t.Errorf("active set read with the password = %v, %v; want [owner] (the intruder's ZADD never ran)", got, err)
	}
}

// TestRedisPasswordIsNewEachStart: two starts have different passwords, long enough not to be guessed,
// and one's password does not open the other.
func TestRedisPasswordIsNewEachStart(t *testing.T) {
	a, b := start(t), start(t)
	if a.Password() == b.Password() {
		t.Fatalf("two starts share the password %q, want one each", a.Password())
	}
	if n := len(a.Password()); n < 26 {
		t.Errorf("password of %d characters, want at least 26 (128 random bits in base32)", n)
	}
	cross := redis.NewClient(&redis.Options{Addr: b.Addr(), Password: a.Password(), MaxRetries: -1})
	t.Cleanup(func() { cross.Close() })
	if err := cross.Ping(t.Context()).Err(); err == nil {
		t.Error("PING with another start's password = nil, want it refused")
	}
}

// TestRedisAgesKeysWithThePassword: the clock still ages TTLs with auth required (it drives the server
// directly, not as a client).
func TestRedisAgesKeysWithThePassword(t *testing.T) {
	m := start(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), Password: m.Password()})
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	if err := c.Set(ctx, "k", "v", 100*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Exists(ctx, "k").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 100 ms TTL still exists after 5 s, want it expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
