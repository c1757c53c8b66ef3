package server_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// TestForgedPassesNeverReachTheDatabase: a pass that is tampered with, unsigned (alg none), signed with
// another key or another algorithm, for another screening, expired, or already spent is refused through
// the real endpoint (401 INVALID_PASS; spent: 410 PASS_SPENT) without any SQL and without taking a seat
// lock. No SQL is proved twice: the pool hands out no connection (every connection is closed after use,
// so one used shows in DBStats.MaxIdleClosed), and on PostgreSQL, whose transaction counter for the test's
// own database does not move. The screenings' catalogs are in memory, as they are after the first request
// for each (Booking.Exists reads a catalog from SQL once, before it looks at the pass).
func TestForgedPassesNeverReachTheDatabase(t *testing.T) {
	for _, kind := range testenv.Kinds(t) {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			var env *testenv.Env
			var pg *xactCounter
			if kind == testenv.Real {
				// A database of its own, not a schema in the shared one: its transaction counter then counts
				// this test's server alone.
				env, pg = ownDatabase(t)
			} else {
				// SQLite keeps no transaction counter: the pool's count below is the proof here.
				env = testenv.New(t, kind)
			}
			a := newApp(t, env, nil)
			env.Demo(t, "s2", 1, 5)
			passes := a.admit(t, "s1", 2)
			live, spent := passes[0], passes[1]
			if r := a.reserve(t, "s1", spent, `{"seats":["A1"]}`); r.status != http.StatusCreated {
				t.Fatalf("reservation that spends the pass = %d %s, want 201", r.status, r)
			}
			for _, s := range []string{"s1", "s2"} {
				if r := a.get(t, "/api/screenings/"+s+"/seats"); r.status != http.StatusOK {
					t.Fatalf("GET seats of %s = %d %s", s, r.status, r)
				}
			}
			c, err := a.passes.Verify(live, "s1")
			if err != nil {
				t.Fatal(err)
			}
			claims := passClaimsOf("s1", c.Token, c.ExpiresAt)
			header, payload, sig := splitPass(t, live)

			attacks := []struct {
				name, screening, pass string
				status                int
				code                  string
			}{
				{"tampered signature", "s1", header + "." + payload + "." + flipChar(sig, len(sig)/2), 401, "INVALID_PASS"},
				{"signature of another pass", "s1", header + "." + payload + "." + splitSig(t, spent), 401, "INVALID_PASS"},
				{"tampered claims", "s1", header + "." + b64JSON(t, passClaimsOf("s2", c.Token, c.ExpiresAt)) + "." + sig, 401, "INVALID_PASS"},
				{"alg none, no signature", "s1", b64JSON(t, map[string]any{"alg": "none"}) + "." + payload + ".", 401, "INVALID_PASS"},
				{"alg none, typ JWT, library-made", "s1", signed(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims), 401, "INVALID_PASS"},
				{"alg none keeping the signature", "s1", b64JSON(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + payload + "." + sig, 401, "INVALID_PASS"},
				{"HS256 with another key", "s1", signed(t, jwt.SigningMethodHS256, []byte("not-the-secret-0123456789abcdef0123"), claims), 401, "INVALID_PASS"},
				{"HS512 with the right key", "s1", signed(t, jwt.SigningMethodHS512, secret, claims), 401, "INVALID_PASS"},
				{"pass for s1 used on s2", "s2", live, 401, "INVALID_PASS"},
				{"audience s2, jti of s1", "s2", signed(t, jwt.SigningMethodHS256, secret, withAudience(claims, "s2")), 401, "INVALID_PASS"},
				{"expired", "s1", issue(t, a, "s1", c.Token, time.Now().Add(-time.Minute)), 401, "INVALID_PASS"},
				{"spent", "s1", spent, 410, "PASS_SPENT"},
			}
			if pg != nil {
				pg.settle(t, env.DB)
			} else {
				env.DB.SetMaxIdleConns(-1) // no idle connection is kept: each one used is closed and counted
			}
			for _, at := range attacks {
				t.Run(at.name, func(t *testing.T) {
					poolBefore := env.DB.Stats()
					var xactBefore int64
					if pg != nil {
						xactBefore = pg.read(t)
					}
					r := a.reserve(t, at.screening, at.pass, `{"seats":["A3","A4"]}`)
					wantError(t, "POST reservation ("+at.name+")", r, at.status, at.code)

					poolAfter := env.DB.Stats()
					if used := poolAfter.MaxIdleClosed - poolBefore.MaxIdleClosed; used != 0 || poolAfter.OpenConnections != 0 {
						t.Errorf("%s: the pool handed out %d connections (%d open), want none", at.name, used, poolAfter.OpenConnections)
					}
					if pg != nil {
						if after := pg.read(t); after != xactBefore {
							t.Errorf("%s: database %s committed or rolled back %d transactions, want 0", at.name, pg.name, after-xactBefore)
						}
					}
					if keys := append(seatLocks(t, env, "s1", 2, 5), seatLocks(t, env, "s2", 1, 5)...); len(keys) > 0 {
						t.Errorf("%s: seat locks left in Redis: %q", at.name, keys)
					}
				})
			}

			// The refusals booked nothing and left the live pass as it was: it still reserves A3 and A4.
			env.DB.SetMaxIdleConns(2)
			var rows int
			if err := env.DB.GetContext(ctx, &rows, `SELECT COUNT(*) FROM reservations`); err != nil {
				t.Fatal(err)
			}
			if rows != 1 {
				t.Errorf("reservations after the attacks = %d, want 1 (the one that spent its pass)", rows)
			}
			if r := a.reserve(t, "s1", live, `{"seats":["A3","A4"]}`); r.status != http.StatusCreated {
				t.Errorf("reservation with the live pass after the attacks = %d %s, want 201", r.status, r)
			}
		})
	}
}

// passClaimsOf is the payload pass.Issuer.Issue signs for token's admission to screening until adm.
func passClaimsOf(screening, token string, adm time.Time) jwt.MapClaims {
	exp := adm.Truncate(time.Second)
	if !exp.Equal(adm) {
		exp = exp.Add(time.Second)
	}
	return jwt.MapClaims{
		"sub": token, "aud": []string{screening}, "exp": exp.Unix(), "iat": time.Now().Unix(),
		"jti": pass.ID(screening, token, adm), "adm": adm.UnixMilli(),
	}
}

func withAudience(c jwt.MapClaims, aud string) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	out["aud"] = []string{aud}
	return out
}

func signed(t *testing.T, m jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func issue(t *testing.T, a *testServer, screening, token string, adm time.Time) string {
	t.Helper()
	p, err := a.passes.Issue(screening, token, adm)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func b64JSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func splitPass(t *testing.T, pass string) (header, payload, sig string) {
	t.Helper()
	parts := strings.Split(pass, ".")
	if len(parts) != 3 {
		t.Fatalf("pass %q has %d segments, want 3", pass, len(parts))
	}
	return parts[0], parts[1], parts[2]
}

func splitSig(t *testing.T, pass string) string {
	t.Helper()
	_, _, sig := splitPass(t, pass)
	return sig
}

// flipChar changes the character at i to another base64url character that changes the decoded bytes (not
// the last one, whose low bits base64 ignores).
func flipChar(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

// seatLocks lists the seat lock keys of screening's rows × perRow seats that exist in Redis (by name, not
// by SCAN: the real Redis is shared and large).
func seatLocks(t *testing.T, env *testenv.Env, screening string, rows, perRow int) []string {
	t.Helper()
	var keys []string
	for _, seat := range booking.Grid(rows, perRow) {
		k := queue.Key(env.Prefix, screening, "seat:"+seat.ID)
		n, err := env.Redis.Exists(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			keys = append(keys, k)
		}
	}
	return keys
}

// xactCounter reads PostgreSQL's count of committed and rolled back transactions of one database, over a
// connection to another database (so reading it is not counted).
type xactCounter struct {
	admin *sqlx.DB
	name  string
}

// settle makes every transaction of the database so far counted: the pool keeps no idle connection from
// now on, and a backend reports its statistics when it exits (an idle one may hold them for seconds).
func (x *xactCounter) settle(t *testing.T, db *sqlx.DB) {
	t.Helper()
	db.SetMaxIdleConns(-1)
	x.waitNoBackends(t)
}

// waitNoBackends waits until no session is connected to the database.
func (x *xactCounter) waitNoBackends(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := x.admin.Get(&n, `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1`, x.name); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still connected to %s", n, x.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// read returns xact_commit + xact_rollback once no session is left to report more.
func (x *xactCounter) read(t *testing.T) int64 {
	t.Helper()
	x.waitNoBackends(t)
	conn, err := x.admin.Connx(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// One connection for both: the snapshot cleared is the one the count is then read from.
	if _, err := conn.ExecContext(context.Background(), `SELECT pg_stat_clear_snapshot()`); err != nil {
		t.Fatal(err)
	}
	var n int64
	err = conn.GetContext(context.Background(), &n, `SELECT pg_stat_get_db_xact_commit(oid) + pg_stat_get_db_xact_rollback(oid)
		FROM pg_database WHERE datname = $1`, x.name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ownDatabase is a real Env whose PostgreSQL side is a database of its own (created from the test
// database's server and dropped afterwards) rather than a schema, with the real Redis under a key prefix
// of its own.
func ownDatabase(t *testing.T) (*testenv.Env, *xactCounter) {
	t.Helper()
	ctx := context.Background()
	base := os.Getenv("WAITROOM_TEST_DATABASE_URL")
	if base == "" {
		base = testenv.DefaultDatabaseURL
	}
	admin, err := sqlx.Open("postgres", base)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.Unique("waitroom_attack_")
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		admin.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db, err := booking.Open(ctx, u.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := booking.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}

	addr := os.Getenv("WAITROOM_TEST_REDIS_ADDR")
	if addr == "" {
		addr = testenv.DefaultRedisAddr
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	prefix := testenv.Unique("t") + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	env := &testenv.Env{Kind: testenv.Real, Redis: rdb, RedisAddr: addr, Prefix: prefix, DB: db, DatabaseURL: u.String()}
	return env, &xactCounter{admin: admin, name: name}
}

// TestEdDSAServerRefusesEveryOtherAlgorithmAndKid: a server with Ed25519 keys (and, as keys win, the old
// secret still in its settings) publishes its public keys and refuses through the real endpoint a pass for
// an unknown kid or none, one signed by another key under the right kid, alg none, and an HS256 pass keyed
// with the secret it no longer uses or with its own public key (algorithm confusion); its own pass reserves.
func TestEdDSAServerRefusesEveryOtherAlgorithmAndKid(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		k1 := mustPassKey(t, "k1:"+base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
		a := newApp(t, env, func(c *config.Config) { c.Pass.Keys = []string{k1.String()} })
		if r := a.get(t, "/.well-known/jwks.json"); r.status != http.StatusOK || !strings.Contains(string(r.body), `"kid":"k1"`) {
			t.Fatalf("GET /.well-known/jwks.json = %d %s, want 200 with kid k1", r.status, r)
		}
		live := a.admit(t, "s1", 1)[0]
		header, payload, sig := splitPass(t, live)
		var h map[string]any
		if err := json.Unmarshal(mustB64(t, header), &h); err != nil || h["alg"] != "EdDSA" || h["kid"] != "k1" {
			t.Fatalf("pass header = %v, %v, want alg EdDSA kid k1", h, err)
		}
		c, err := a.passes.Verify(live, "s1")
		if err != nil {
			t.Fatal(err)
		}
		claims := passClaimsOf("s1", c.Token, c.ExpiresAt)
		other := mustPassKey(t, "k1:"+base64.StdEncoding.EncodeToString([]byte("another-seed-of-thirty-two-bytes")))
		pub := []byte(k1.Private.Public().(ed25519.PublicKey))
		withKid := func(m jwt.SigningMethod, kid string, key any) string {
			tk := jwt.NewWithClaims(m, claims)
			if kid != "" {
				tk.Header["kid"] = kid
			}
			s, err := tk.SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		for name, pass := range map[string]string{
			"tampered signature":                  header + "." + payload + "." + flipChar(sig, len(sig)/2),
			"tampered claims":                     header + "." + b64JSON(t, passClaimsOf("s1", queue.NewToken(), c.ExpiresAt)) + "." + sig,
			"unknown kid":                         withKid(jwt.SigningMethodEdDSA, "k9", k1.Private),
			"no kid":                              withKid(jwt.SigningMethodEdDSA, "", k1.Private),
			"another key under kid k1":            withKid(jwt.SigningMethodEdDSA, "k1", other.Private),
			"alg none":                            b64JSON(t, map[string]any{"alg": "none", "kid": "k1"}) + "." + payload + ".",
			"HS256 with the old secret":           signed(t, jwt.SigningMethodHS256, secret, claims),
			"HS256 with the public key as secret": withKid(jwt.SigningMethodHS256, "k1", pub),
		} {
			wantError(t, "POST reservation ("+name+")", a.reserve(t, "s1", pass, `{"seats":["A1"]}`), 401, "INVALID_PASS")
		}
		if r := a.reserve(t, "s1", live, `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Errorf("reservation with the server's own EdDSA pass = %d %s, want 201", r.status, r)
		}
	})
}

func mustPassKey(t *testing.T, entry string) pass.Key {
	t.Helper()
	k, err := pass.ParseKey(entry)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The key set is public and cacheable; a server that signs HS256 publishes none (its secret stays secret).
func TestJWKSIsCacheableAndEmptyForAnHS256Server(t *testing.T) {
	a := newApp(t, testenv.New(t, testenv.Embedded), nil)
	res, err := a.client.Get(a.ts.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body strings.Builder
	if _, err := io.Copy(&body, res.Body); err != nil {
		t.Fatal(err)
	}
	h := res.Header
	if res.StatusCode != http.StatusOK || body.String() != `{"keys":[]}` || h.Get("Content-Type") != "application/jwk-set+json" ||
		h.Get("Cache-Control") != "public, max-age=300" || h.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET /.well-known/jwks.json of an HS256 server = %d %s %v, want 200 {\"keys\":[]}, application/jwk-set+json, public max-age=300, any origin", res.StatusCode, body.String(), h)
	}
	if strings.Contains(body.String(), string(secret)) {
		t.Errorf("the key set shows the secret")
	}
}
