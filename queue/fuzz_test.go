// Fuzz tests of the decoders of outside input: tokens and screening ids (passes: pass/fuzz_test.go).

package queue_test

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/queue"
)

// The fuzz targets of what clients hand the queue: tokens and screening ids (ValidToken, ValidScreening).
// Seeds: testdata/fuzz/<FuzzName>.

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
