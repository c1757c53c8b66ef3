// Fuzz tests of Ed25519 passes: Verify of any string, and of any edit of a valid pass.

package pass_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/pass"
)

// fuzzKeyed is an EdDSA Passes of two keys, k2 signing.
func fuzzKeyed(f *testing.F) *pass.Issuer {
	return mustKeyed(f, mustKey(f, "k2:"+seedOf('f')), mustKey(f, "k1:"+seedOf('g')))
}

// FuzzVerifyEdDSAPass: Verify with keys never panics on any string; whatever it accepts is a pass of that
// screening.
func FuzzVerifyEdDSAPass(f *testing.F) {
	p := fuzzKeyed(f)
	good, err := p.Issue("fz1", strings.Repeat("ab", 16), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "fz1")
	f.Add(strings.Replace(good, "EdDSA", "HS256", 1), "fz1")
	f.Fuzz(func(t *testing.T, signed, screening string) {
		checkVerify(t, p, signed, screening)
	})
}

// FuzzVerifyMutatedEdDSAPass: an edit of a valid EdDSA pass never verifies, unless it is the pass itself or
// the same pass written another way in base64 (sameEncoding): only the signing key makes a pass.
func FuzzVerifyMutatedEdDSAPass(f *testing.F) {
	p := fuzzKeyed(f)
	tok := strings.Repeat("ab", 16)
	f.Add(uint16(10), uint16(3), "k1")
	f.Add(uint16(200), uint16(0), "A")
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
		if got != want || (mutated != signed && !sameEncoding(mutated, signed)) {
			t.Fatalf("pass %q edited at %d (cut %d, insert %q) still verifies: %q", signed, i, j-i, insert, mutated)
		}
	})
}
