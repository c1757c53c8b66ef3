package ids_test

import (
	"regexp"
	"testing"

	"github.com/waitroom/waitroom/ids"
)

// TestNewIsUniqueHex: 128 bits in 32 lowercase hex digits, and no two alike in many draws.
func TestNewIsUniqueHex(t *testing.T) {
	hex := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 10_000 {
		id := ids.New()
		if !hex.MatchString(id) {
			t.Fatalf("New() = %q, want 32 lowercase hex digits", id)
		}
		if seen[id] {
			t.Fatalf("New() = %q twice in 10,000 draws", id)
		}
		seen[id] = true
	}
}
