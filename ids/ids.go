// Package ids makes the project's random ids, in one place: 128 bits from crypto/rand, in lowercase hex.
// A queue token, a webhook's message id, a lock's owner and an instance's name are all one of these (or a
// prefix of one); what each means is its user's.
//
// Files: ids.go.
package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns 128 random bits in 32 lowercase hex digits. A prefix of it (New()[:n]) is n/2 random bytes.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥ 1.24 it panics instead).
	return hex.EncodeToString(b[:])
}
