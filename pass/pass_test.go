// Tests of the verifier against a real waitroom server's real key set: its passes verify, every forgery is
// refused, and a key rotated out of signing keeps its passes valid until it is dropped.

package pass_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// keyEntry is a pass key entry "kid:seed" with a fresh random seed.
func keyEntry(t *testing.T, kid string) string {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		t.Fatal(err)
	}
	return kid + ":" + base64.StdEncoding.EncodeToString(seed)
}

// startRoom starts a real waitroom server signing with keys (comma-separated entries), admitting fast.
func startRoom(t *testing.T, env *testenv.Env, keys string) *apptest.Server {
	t.Helper()
	return apptest.Start(t, env, map[string]string{
		"WAITROOM_PASS_KEYS":            keys,
		"WAITROOM_ADMISSION_INTERVAL":   "200ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "10",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "100",
	})
}

// admitted queues a fresh user for the demo screening and returns its admission message.
func admitted(t *testing.T, srv *apptest.Server) testenv.Message {
	t.Helper()
	sock := srv.Dial(t, "demo", "")
	defer sock.Close()
	m, _ := sock.Until(t, "admitted", 10*time.Second)
	if m.Pass == "" {
		t.Fatalf("admitted = %+v, want a pass", m)
	}
	return m
}

// verifier fetches the key set at base's /.well-known/jwks.json, stopped when the test ends.
func verifier(t *testing.T, base string, opts ...pass.Option) *pass.Verifier {
	t.Helper()
	tr := &http.Transport{}
	ctx, cancel := context.WithCancel(context.Background())
	v, err := pass.NewVerifier(ctx, base+"/.well-known/jwks.json", append([]pass.Option{pass.WithHTTPClient(&http.Client{Transport: tr})}, opts...)...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close(); cancel(); tr.CloseIdleConnections() })
	return v
}

func kidOf(t *testing.T, p string) string {
	t.Helper()
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(segment(t, p, 0), &h); err != nil {
		t.Fatal(err)
	}
	return h.Kid
}

func segment(t *testing.T, p string, i int) []byte {
	t.Helper()
	parts := strings.Split(p, ".")
	if len(parts) != 3 {
		t.Fatalf("pass %q: %d segments, want 3", p, len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAServersPassVerifiesThroughItsJWKS(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := startRoom(t, env, keyEntry(t, "k1"))
		m := admitted(t, srv)
		v := verifier(t, srv.URL)
		c, err := v.Verify(m.Pass, "demo")
		if err != nil {
			t.Fatalf("Verify(the server's pass) = %v, want nil", err)
		}
		exp, err := time.Parse(time.RFC3339Nano, m.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		if c.Token != m.Token || c.Screening != "demo" || len(c.ID) != 32 || !c.ExpiresAt.Equal(exp) ||
			c.IssuedAt.After(time.Now()) || time.Since(c.IssuedAt) > time.Minute {
			t.Errorf("Verify = %+v, want token %s, screening demo, a 32-hex id, expiry %v, issued just now", c, m.Token, exp)
		}
		if _, err := v.Verify(m.Pass, "other"); !errors.Is(err, pass.ErrInvalid) {
			t.Errorf("Verify(pass, another screening) = %v, want %v", err, pass.ErrInvalid)
		}
	})
}

func TestForgedAndExpiredPassesAreRefused(t *testing.T) {
	kinds := testenv.Kinds(t)
	env := testenv.New(t, kinds[len(kinds)-1])
	k1 := keyEntry(t, "k1")
	srv := startRoom(t, env, k1)
	m := admitted(t, srv)
	v := verifier(t, srv.URL)
	c, err := v.Verify(m.Pass, "demo")
	if err != nil {
		t.Fatal(err)
	}
	var claims jwt.MapClaims
	if err := json.Unmarshal(segment(t, m.Pass, 1), &claims); err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct {
			X string `json:"x"`
		} `json:"keys"`
	}
	resp, err := http.Get(srv.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if err != nil || len(set.Keys) != 1 {
		t.Fatalf("the server's JWK Set: %v, %d keys, want 1", err, len(set.Keys))
	}
	public, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	sign := func(m jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
		tk := jwt.NewWithClaims(m, c)
		if kid != "" {
			tk.Header["kid"] = kid
		}
		s, err := tk.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	parts := strings.Split(m.Pass, ".")
	tampered := jwt.MapClaims{}
	for k, val := range claims {
		tampered[k] = val
	}
	tampered["sub"] = strings.Repeat("0", 32)

	if _, err := v.Verify(sign(jwt.SigningMethodEdDSA, "k1", privateKey(t, k1), claims), "demo"); err != nil {
		t.Fatalf("the cases' unchanged pass, signed here with the server's key: Verify = %v, want nil", err)
	}
	for name, p := range map[string]string{
		"tampered payload":                   parts[0] + "." + b64JSON(t, tampered) + "." + parts[2],
		"unknown kid":                        sign(jwt.SigningMethodEdDSA, "k9", stranger, claims),
		"another key under the server's kid": sign(jwt.SigningMethodEdDSA, "k1", stranger, claims),
		"the server's key, no kid":           sign(jwt.SigningMethodEdDSA, "", privateKey(t, k1), claims),
		"alg none":                           b64JSON(t, map[string]any{"alg": "none", "kid": "k1"}) + "." + parts[1] + ".",
		"alg none, library-made":             sign(jwt.SigningMethodNone, "k1", jwt.UnsafeAllowNoneSignatureType, claims),
		"HS256 keyed with the public key":    sign(jwt.SigningMethodHS256, "k1", public, claims),
		"HS256 keyed with the tests' secret": sign(jwt.SigningMethodHS256, "k1", []byte(apptest.Secret), claims),
		"HS256 keyed with the JWK x as text": sign(jwt.SigningMethodHS256, "k1", []byte(set.Keys[0].X), claims),
		"not a JWT":                          "not.a.jwt",
	} {
		if got, err := v.Verify(p, "demo"); !errors.Is(err, pass.ErrInvalid) || got != (pass.Claims{}) {
			t.Errorf("%s: Verify = %+v, %v, want %v and no claims", name, got, err, pass.ErrInvalid)
		}
	}

	behind := func() time.Time { return c.IssuedAt.Add(-10 * time.Second) } // a verifier whose clock is slow
	if _, err := verifier(t, srv.URL, pass.WithClock(behind)).Verify(m.Pass, "demo"); err != nil {
		t.Errorf("Verify by a verifier 10 s behind the room = %v, want nil (iat ahead of it is fine)", err)
	}
	afterExpiry := func() time.Time { return c.ExpiresAt.Add(time.Second) }
	if _, err := verifier(t, srv.URL, pass.WithClock(afterExpiry)).Verify(m.Pass, "demo"); !errors.Is(err, pass.ErrInvalid) {
		t.Errorf("Verify a second after the admission ended = %v, want %v", err, pass.ErrInvalid)
	}
	justAfter := func() time.Time { return c.ExpiresAt.Add(time.Millisecond) }
	if _, err := verifier(t, srv.URL, pass.WithClock(justAfter)).Verify(m.Pass, "demo"); !errors.Is(err, pass.ErrInvalid) {
		t.Errorf("Verify a millisecond after adm (exp not yet) = %v, want %v", err, pass.ErrInvalid)
	}
	if _, err := verifier(t, srv.URL, pass.WithClock(afterExpiry), pass.WithLeeway(5*time.Second)).Verify(m.Pass, "demo"); err != nil {
		t.Errorf("Verify a second after expiry with a 5s leeway = %v, want nil", err)
	}
}

// privateKey is the Ed25519 key of entry "kid:seed".
func privateKey(t *testing.T, entry string) ed25519.PrivateKey {
	t.Helper()
	_, seed, _ := strings.Cut(entry, ":")
	b, err := base64.StdEncoding.DecodeString(seed)
	if err != nil {
		t.Fatal(err)
	}
	return ed25519.NewKeyFromSeed(b)
}

func b64JSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// switchable is a real reverse proxy whose origin can be changed: one JWKS URL whose server is replaced, as
// a rolling deploy replaces the instances behind one host name.
type switchable struct {
	target atomic.Pointer[url.URL]
}

func (s *switchable) to(t *testing.T, base string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	s.target.Store(u)
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(s.target.Load()) }}).ServeHTTP(w, r)
}

func TestARotatedOutKeyVerifiesUntilDroppedAndNewPassesCarryTheNewKid(t *testing.T) {
	kinds := testenv.Kinds(t)
	env := testenv.New(t, kinds[len(kinds)-1])
	k1, k2 := keyEntry(t, "k1"), keyEntry(t, "k2")
	front := &switchable{}
	proxy := httptest.NewServer(front)
	t.Cleanup(proxy.Close)

	before := startRoom(t, env, k1)
	front.to(t, before.URL)
	old := admitted(t, before)
	if kid := kidOf(t, old.Pass); kid != "k1" {
		t.Fatalf("pass before the rotation has kid %q, want k1", kid)
	}
	cached := verifier(t, proxy.URL) // holds k1 alone
	if _, err := cached.Verify(old.Pass, "demo"); err != nil {
		t.Fatalf("Verify(k1's pass) before the rotation = %v", err)
	}

	rotated := startRoom(t, env, k2+","+k1)
	front.to(t, rotated.URL)
	fresh := admitted(t, rotated)
	if kid := kidOf(t, fresh.Pass); kid != "k2" {
		t.Errorf("pass after the rotation has kid %q, want k2", kid)
	}
	// The verifier that held k1 alone meets kid k2 and fetches the set again at once.
	if _, err := cached.Verify(fresh.Pass, "demo"); err != nil {
		t.Errorf("Verify(k2's pass) by a verifier that held only k1 = %v, want nil (refetched)", err)
	}
	for name, v := range map[string]*pass.Verifier{"the cached verifier": cached, "a new verifier": verifier(t, rotated.URL)} {
		if _, err := v.Verify(old.Pass, "demo"); err != nil {
			t.Errorf("%s: Verify(k1's pass) with keys [k2 k1] = %v, want nil until it expires", name, err)
		}
	}

	dropped := startRoom(t, env, k2)
	v := verifier(t, dropped.URL)
	if _, err := v.Verify(old.Pass, "demo"); !errors.Is(err, pass.ErrInvalid) {
		t.Errorf("Verify(k1's pass) with keys [k2] = %v, want %v", err, pass.ErrInvalid)
	}
	if _, err := v.Verify(fresh.Pass, "demo"); err != nil {
		t.Errorf("Verify(k2's pass) with keys [k2] = %v, want nil", err)
	}
}

func TestNewVerifierFailsWhenTheKeySetCannotBeFetched(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	for _, u := range []string{notFound.URL + "/.well-known/jwks.json", "not a url"} {
		v, err := pass.NewVerifier(t.Context(), u, pass.WithHTTPTimeout(2*time.Second))
		if err == nil {
			v.Close()
			t.Errorf("NewVerifier(%q) = nil error, want one", u)
		}
	}
	if _, err := pass.NewVerifier(t.Context(), notFound.URL, pass.WithLeeway(-time.Second)); err == nil {
		t.Errorf("NewVerifier with a negative leeway = nil error, want one")
	}
}

// make run's server (the embedded Redis, no key and no secret set) draws a key of its own and publishes it.
func TestTheEmbeddedDefaultIssuesEdDSAPassesAnyoneCanVerify(t *testing.T) {
	srv := apptest.Start(t, testenv.New(t, testenv.Embedded), map[string]string{"WAITROOM_ADMISSION_INTERVAL": "200ms"})
	m := admitted(t, srv)
	if kid := kidOf(t, m.Pass); !strings.HasPrefix(kid, "local-") {
		t.Errorf("the default server's pass has kid %q, want a drawn local- key", kid)
	}
	if _, err := verifier(t, srv.URL).Verify(m.Pass, "demo"); err != nil {
		t.Errorf("Verify(the default server's pass) = %v, want nil", err)
	}
}
