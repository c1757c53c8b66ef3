// Fuzz tests of the decoders of outside input: tokens, screening ids and passes.

package queue_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
)

// The fuzz targets of what clients hand the queue: tokens and screening ids (ValidToken, ValidScreening)
// and passes (Passes.Verify). Seeds: testdata/fuzz/<FuzzName>. The seeds of FuzzVerifyPass include passes
// signed with fuzzSecret for screening fz1 that expire in 2100, so a committed valid pass keeps verifying.

var fuzzSecret = []byte("fuzz-secret-0123456789abcdef0123456789")

// FuzzValidToken: a token is accepted exactly when it is 32 lowercase hex digits.
func FuzzValidToken(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) == 32
		for i := 0; i < len(s); i++ {
			if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
				want = false
			}
		}
		if got := queue.ValidToken(s); got != want {
			t.Fatalf("ValidToken(%q) = %v, want %v", s, got, want)
		}
	})
}

// FuzzValidScreening: a screening id is accepted exactly when it is 1–64 ASCII letters, digits, '-' or
// '_', so the keys it names keep one Redis Cluster hash tag, the id itself.
func FuzzValidScreening(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) >= 1 && len(s) <= 64
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				want = false
			}
		}
		if got := queue.ValidScreening(s); got != want {
			t.Fatalf("ValidScreening(%q) = %v, want %v", s, got, want)
		}
		if want {
			k := queue.Key("p:", s, "waiting")
			open, closing := strings.Index(k, "{"), strings.Index(k, "}")
			if strings.Count(k, "{") != 1 || strings.Count(k, "}") != 1 || k[open+1:closing] != s {
				t.Fatalf("Key(%q) = %q: the hash tag is not the screening id", s, k)
			}
		}
	})
}

// checkVerify checks one Verify: a refusal wraps ErrInvalidPass with a message; an acceptance is a pass of
// that screening, of a well-formed token, naming its admission, not yet expired, and of no other screening.
func checkVerify(t *testing.T, p *queue.Passes, pass, screening string) (queue.Claims, bool) {
	t.Helper()
	c, err := p.Verify(pass, screening)
	if err != nil {
		if !errors.Is(err, queue.ErrInvalidPass) || err.Error() == "" || c != (queue.Claims{}) {
			t.Fatalf("Verify(%q, %q) = %+v, %v; want ErrInvalidPass with a message and no claims", pass, screening, c, err)
		}
		return c, false
	}
	if c.Screening != screening || !queue.ValidToken(c.Token) || c.ID != queue.PassID(screening, c.Token, c.ExpiresAt) {
		t.Fatalf("Verify(%q, %q) = %+v: claims not of this screening's admission", pass, screening, c)
	}
	// exp is the admission's expiry rounded up to the second; the pass must not have lapsed by more.
	if !c.ExpiresAt.After(time.Now().Add(-time.Second)) {
		t.Fatalf("Verify(%q, %q) accepted a pass that expired at %s", pass, screening, c.ExpiresAt)
	}
	for _, other := range []string{screening + "x", strings.ToUpper(screening), strings.ToLower(screening), "", "s1"} {
		if other == screening {
			continue
		}
		if oc, err := p.Verify(pass, other); err == nil {
			t.Fatalf("a pass for %q also verifies for %q: %+v", screening, other, oc)
		}
	}
	return c, true
}

// FuzzVerifyPass: Verify never panics on any string; whatever it accepts is a pass of that screening.
func FuzzVerifyPass(f *testing.F) {
	p := queue.NewPasses(fuzzSecret)
	f.Fuzz(func(t *testing.T, pass, screening string) {
		checkVerify(t, p, pass, screening)
	})
}

// FuzzVerifyMutatedPass: an edit of a valid pass (cut bytes at a position, insert others) never verifies,
// unless the result is the pass itself, or the very same pass written another way in base64 (see
// sameEncoding): only the issuer's secret makes a pass.
func FuzzVerifyMutatedPass(f *testing.F) {
	p := queue.NewPasses(fuzzSecret)
	tok := strings.Repeat("ab", 16)
	f.Fuzz(func(t *testing.T, at uint16, cut uint16, insert string) {
		exp := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
		pass, err := p.Issue("fz1", tok, exp)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := checkVerify(t, p, pass, "fz1")
		if !ok {
			t.Fatalf("Verify(Issue(...)) failed")
		}
		i := int(at) % (len(pass) + 1)
		j := min(i+int(cut), len(pass))
		mutated := pass[:i] + insert + pass[j:]
		got, ok := checkVerify(t, p, mutated, "fz1")
		if !ok {
			return
		}
		if got != want {
			t.Fatalf("mutated pass %q verifies to %+v, want %+v or a refusal", mutated, got, want)
		}
		if mutated != pass && !sameEncoding(mutated, pass) {
			t.Fatalf("pass %q edited at %d (cut %d, insert %q) still verifies: %q", pass, i, j-i, insert, mutated)
		}
	})
}

// sameEncoding reports whether a and b are the same three JWT segments, byte for byte once decoded, with
// only the signature written differently. golang-jwt decodes segments with Go's lenient base64 (without
// WithStrictDecoding): it ignores CR and LF anywhere and the unused low bits of the last character, and
// only the signature segment is decoded without being signed over. Such a pass is the same pass with the
// same claims (its id, which is what is spent, is unchanged): a known leniency, reported in issue 7, not a
// forgery.
func sameEncoding(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	if len(pa) != 3 || len(pb) != 3 || pa[0] != pb[0] || pa[1] != pb[1] {
		return false
	}
	sa, errA := base64.RawURLEncoding.DecodeString(pa[2])
	sb, errB := base64.RawURLEncoding.DecodeString(pb[2])
	return errA == nil && errB == nil && string(sa) == string(sb)
}
