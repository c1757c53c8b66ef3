// Tests of Ed25519 passes: key entries read and refused, the JWK Set, rotation, and every pass an EdDSA
// Passes must refuse; and the benchmark of Verify for both algorithms.

package pass_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// seedOf is a fixed test seed: 32 bytes of b.
func seedOf(b byte) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), 32)))
}

func mustKey(t testing.TB, entry string) pass.Key {
	t.Helper()
	k, err := pass.ParseKey(entry)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustKeyed(t testing.TB, keys ...pass.Key) *pass.Issuer {
	t.Helper()
	p, err := pass.NewIssuer(keys)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseKeyReadsEveryBase64SpellingAndNamesTheKidNotTheSeed(t *testing.T) {
	raw := []byte(strings.Repeat("\xfb", 32)) // '+' and '/' in standard base64, '-' and '_' in URL base64
	want := ed25519.NewKeyFromSeed(raw)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		entry := "k1:" + enc.EncodeToString(raw)
		k, err := pass.ParseKey(entry)
		if err != nil || k.ID != "k1" || !k.Private.Equal(want) {
			t.Errorf("ParseKey(%q) = %q, %v, want kid k1 and the seed's key", entry, k.ID, err)
		}
	}
	if k := mustKey(t, "k1:"+seedOf('a')); k.String() != "k1:"+seedOf('a') {
		t.Errorf("String() = %q, want the entry it was read from", k.String())
	}
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-bytes-xx"))
	for entry, want := range map[string]string{
		"no-colon":           "want kid:base64-seed",
		":" + seedOf('a'):    "kid",
		"a b:" + seedOf('a'): "kid",
		strings.Repeat("k", 65) + ":" + seedOf('a'): "kid",
		"k1:" + short:     "16 bytes, want 32",
		"k1:not base64!!": "not base64",
	} {
		_, err := pass.ParseKey(entry)
		if !errors.Is(err, pass.ErrBadKey) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKey(%q) = %v, want %v naming %q", entry, err, pass.ErrBadKey, want)
		}
		if err != nil && strings.Contains(err.Error(), seedOf('a')) {
			t.Errorf("ParseKey(%q)'s error %q shows the seed", entry, err)
		}
	}
}

func TestNewIssuerRefusesNoKeysAndATwiceListedKid(t *testing.T) {
	if _, err := pass.NewIssuer(nil); !errors.Is(err, pass.ErrBadKey) {
		t.Errorf("NewIssuer(nil) = %v, want %v", err, pass.ErrBadKey)
	}
	k1, k1b := mustKey(t, "k1:"+seedOf('a')), mustKey(t, "k1:"+seedOf('b'))
	if _, err := pass.NewIssuer([]pass.Key{k1, k1b}); !errors.Is(err, pass.ErrBadKey) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("NewIssuer(k1, k1) = %v, want %v: listed twice", err, pass.ErrBadKey)
	}
	if _, err := pass.NewIssuer([]pass.Key{{ID: "k1", Private: ed25519.PrivateKey("short")}}); !errors.Is(err, pass.ErrBadKey) {
		t.Errorf("NewIssuer(a short key) = %v, want %v", err, pass.ErrBadKey)
	}
}

func TestJWKSPublishesEveryPublicKeyAndNoPrivateOne(t *testing.T) {
	k1, k2 := mustKey(t, "k1:"+seedOf('a')), mustKey(t, "k2:"+seedOf('b'))
	p := mustKeyed(t, k2, k1)
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(p.JWKS(), &set); err != nil {
		t.Fatalf("JWKS() = %s: %v", p.JWKS(), err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("JWKS() has %d keys, want 2: %s", len(set.Keys), p.JWKS())
	}
	for i, want := range []pass.Key{k2, k1} {
		got := set.Keys[i]
		pub, ok := got.Key.(ed25519.PublicKey)
		if got.KeyID != want.ID || !ok || !pub.Equal(want.Private.Public()) || got.Algorithm != "EdDSA" || got.Use != "sig" || !got.IsPublic() {
			t.Errorf("JWKS key %d = kid %q alg %q use %q public %v, want kid %q, EdDSA, sig, its public key", i, got.KeyID, got.Algorithm, got.Use, got.IsPublic(), want.ID)
		}
	}
	var raw struct {
		Keys []map[string]any `json:"keys"`
	}
	_ = json.Unmarshal(p.JWKS(), &raw)
	if k := raw.Keys[0]; k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["x"] == nil || k["d"] != nil {
		t.Errorf("JWKS key 0 = %v, want kty OKP, crv Ed25519, an x and no d", k)
	}
	if got := string(pass.NewSecretIssuer(secret).JWKS()); got != `{"keys":[]}` {
		t.Errorf("HS256 JWKS() = %s, want the empty set", got)
	}
}

func TestEdDSAPassCarriesTheSigningKidAndRoundTrips(t *testing.T) {
	p := mustKeyed(t, mustKey(t, "k1:"+seedOf('a')))
	tok := queue.NewToken()
	exp := time.Now().Add(time.Minute).Truncate(time.Second)
	signed, err := p.Issue(screening, tok, exp)
	if err != nil {
		t.Fatal(err)
	}
	if h := header(t, signed); h["alg"] != "EdDSA" || h["kid"] != "k1" {
		t.Errorf("pass header = %v, want alg EdDSA, kid k1", h)
	}
	c := mustVerify(t, p, signed)
	if c.Token != tok || c.ID != pass.ID(screening, tok, exp) || !c.ExpiresAt.Equal(exp) {
		t.Errorf("Verify = %+v, want token %s expiring %v", c, tok, exp)
	}
	if p.Alg() != "EdDSA" || p.SigningKID() != "k1" || pass.NewSecretIssuer(secret).Alg() != "HS256" {
		t.Errorf("Alg, SigningKID = %s, %s; want EdDSA, k1 (and HS256 for a secret)", p.Alg(), p.SigningKID())
	}
}

func header(t *testing.T, signed string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(signed, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRotatedOutKeyStillVerifiesUntilDropped(t *testing.T) {
	k1, k2 := mustKey(t, "k1:"+seedOf('a')), mustKey(t, "k2:"+seedOf('b'))
	before := mustKeyed(t, k1)
	tok := queue.NewToken()
	exp := time.Now().Add(time.Minute).Truncate(time.Second)
	old, err := before.Issue(screening, tok, exp)
	if err != nil {
		t.Fatal(err)
	}

	rotated := mustKeyed(t, k2, k1)
	if _, err := rotated.Verify(old, screening); err != nil {
		t.Errorf("Verify(k1's pass) with keys [k2 k1] = %v, want nil", err)
	}
	fresh, _ := rotated.Issue(screening, tok, exp)
	if h := header(t, fresh); h["kid"] != "k2" {
		t.Errorf("new pass kid = %v, want k2", h["kid"])
	}
	if _, err := before.Verify(fresh, screening); !errors.Is(err, pass.ErrInvalid) {
		t.Errorf("Verify(k2's pass) by an instance holding only k1 = %v, want %v", err, pass.ErrInvalid)
	}

	dropped := mustKeyed(t, k2)
	if _, err := dropped.Verify(old, screening); !errors.Is(err, pass.ErrInvalid) {
		t.Errorf("Verify(k1's pass) with keys [k2] = %v, want %v", err, pass.ErrInvalid)
	}
}

func TestEdDSAVerifyRefusesEveryOtherAlgorithmKidAndKey(t *testing.T) {
	k1 := mustKey(t, "k1:"+seedOf('a'))
	p := mustKeyed(t, k1)
	tok := queue.NewToken()
	exp := time.Now().Add(time.Minute).Truncate(time.Second)
	claims := handClaims{RegisteredClaims: jwt.RegisteredClaims{
		Subject: tok, Audience: jwt.ClaimStrings{screening}, ExpiresAt: jwt.NewNumericDate(exp),
		IssuedAt: jwt.NewNumericDate(time.Now()), ID: pass.ID(screening, tok, exp),
	}, Adm: exp.UnixMilli()}
	withKid := func(method jwt.SigningMethod, kid string, key any) string {
		tk := jwt.NewWithClaims(method, claims)
		if kid != "" {
			tk.Header["kid"] = kid
		}
		s, err := tk.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := p.Verify(withKid(jwt.SigningMethodEdDSA, "k1", k1.Private), screening); err != nil {
		t.Fatalf("the cases' unchanged pass: Verify = %v, want it to verify", err)
	}
	good := withKid(jwt.SigningMethodEdDSA, "k1", k1.Private)
	parts := strings.Split(good, ".")
	other := mustKey(t, "k1:"+seedOf('z')) // the same kid, another key
	pub := []byte(k1.Private.Public().(ed25519.PublicKey))

	cases := map[string]string{
		"tampered payload": parts[0] + "." + base64.RawURLEncoding.EncodeToString(
			[]byte(strings.Replace(decode(t, parts[1]), tok, queue.NewToken(), 1))) + "." + parts[2],
		"unknown kid":                          withKid(jwt.SigningMethodEdDSA, "k9", k1.Private),
		"no kid":                               withKid(jwt.SigningMethodEdDSA, "", k1.Private),
		"another key under the kid":            withKid(jwt.SigningMethodEdDSA, "k1", other.Private),
		"alg none":                             sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims),
		"HS256 with the public key as secret":  withKid(jwt.SigningMethodHS256, "k1", pub),
		"HS256 with the seed as secret":        withKid(jwt.SigningMethodHS256, "k1", k1.Private.Seed()),
		"HS256 with the JWK Set as secret":     withKid(jwt.SigningMethodHS256, "k1", p.JWKS()),
		"HS256 with the private key as secret": withKid(jwt.SigningMethodHS256, "k1", []byte(k1.Private)),
		"HS256 with a secret, no kid":          sign(t, jwt.SigningMethodHS256, secret, claims),
	}
	for name, signed := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := p.Verify(signed, screening)
			if !errors.Is(err, pass.ErrInvalid) || got != (pass.Claims{}) {
				t.Errorf("Verify = %+v, %v, want %v and no claims", got, err, pass.ErrInvalid)
			}
		})
	}
	// And the other way: an HS256 Passes refuses an EdDSA pass.
	if _, err := pass.NewSecretIssuer(secret).Verify(good, screening); !errors.Is(err, pass.ErrInvalid) {
		t.Errorf("HS256 Verify(EdDSA pass) = %v, want %v", err, pass.ErrInvalid)
	}
}

func decode(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkVerify times one pass check, the reservation's first step, for each algorithm.
func BenchmarkVerify(b *testing.B) {
	exp := time.Now().Add(time.Hour)
	for _, bc := range []struct {
		name   string
		passes *pass.Issuer
	}{
		{"HS256", pass.NewSecretIssuer(secret)},
		{"EdDSA", mustKeyed(b, mustKey(b, "k1:"+seedOf('a')))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			signed, err := bc.passes.Issue(screening, queue.NewToken(), exp)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.passes.Verify(signed, screening); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
