// Fuzz tests of the room's check of a pass (Issuer.Verify with HS256): any string, and any edit of a valid
// pass.

package pass_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// Seeds: testdata/fuzz/<FuzzName>. The seeds of FuzzVerifyPass include passes signed with fuzzSecret for
// screening fz1 that expire in 2100, so a committed valid pass keeps verifying.

var fuzzSecret = []byte("fuzz-secret-0123456789abcdef0123456789")

// checkVerify checks one Verify: a refusal wraps ErrInvalid with a message; an acceptance is a pass of
// that screening, of a well-formed token, naming its admission, not yet expired, and of no other screening.
func checkVerify(t *testing.T, p *pass.Issuer, signed, screening string) (pass.Claims, bool) {
	t.Helper()
	c, err := p.Verify(signed, screening)
	if err != nil {
		if !errors.Is(err, pass.ErrInvalid) || err.Error() == "" || c != (pass.Claims{}) {
			t.Fatalf("Verify(%q, %q) = %+v, %v; want ErrInvalid with a message and no claims", signed, screening, c, err)
		}
		return c, false
	}
	if c.Screening != screening || !queue.ValidToken(c.Token) || c.ID != pass.ID(screening, c.Token, c.ExpiresAt) {
		t.Fatalf("Verify(%q, %q) = %+v: claims not of this screening's admission", signed, screening, c)
	}
	// exp is the admission's expiry rounded up to the second; the pass must not have lapsed by more.
	if !c.ExpiresAt.After(time.Now().Add(-time.Second)) {
		t.Fatalf("Verify(%q, %q) accepted a pass that expired at %s", signed, screening, c.ExpiresAt)
	}
	for _, other := range []string{screening + "x", strings.ToUpper(screening), strings.ToLower(screening), "", "s1"} {
		if other == screening {
			continue
		}
		if oc, err := p.Verify(signed, other); err == nil {
			t.Fatalf("a pass for %q also verifies for %q: %+v", screening, other, oc)
		}
	}
	return c, true
}

// FuzzVerifyPass: Verify never panics on any string; whatever it accepts is a pass of that screening.
func FuzzVerifyPass(f *testing.F) {
	p := pass.NewSecretIssuer(fuzzSecret)
	f.Fuzz(func(t *testing.T, signed, screening string) {
		checkVerify(t, p, signed, screening)
	})
}

// FuzzVerifyMutatedPass: an edit of a valid pass (cut bytes at a position, insert others) never verifies,
// unless the result is the pass itself, or the very same pass written another way in base64 (see
// sameEncoding): only the issuer's secret makes a pass.
func FuzzVerifyMutatedPass(f *testing.F) {
	p := pass.NewSecretIssuer(fuzzSecret)
	tok := strings.Repeat("ab", 16)
	f.Fuzz(func(t *testing.T, at uint16, cut uint16, insert string) {
		exp := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
		signed, err := p.Issue("fz1", tok, exp)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := checkVerify(t, p, signed, "fz1")
		if !ok {
			t.Fatalf("Verify(Issue(...)) failed")
		}
		i := int(at) % (len(signed) + 1)
		j := min(i+int(cut), len(signed))
		mutated := signed[:i] + insert + signed[j:]
		got, ok := checkVerify(t, p, mutated, "fz1")
		if !ok {
			return
		}
		if got != want {
			t.Fatalf("mutated pass %q verifies to %+v, want %+v or a refusal", mutated, got, want)
		}
		if mutated != signed && !sameEncoding(mutated, signed) {
			t.Fatalf("pass %q edited at %d (cut %d, insert %q) still verifies: %q", signed, i, j-i, insert, mutated)
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
