// Token hashes, the pre-queue's seed and its shuffle keys (docs/admission-log.md, "What the verifier
// checks").

package fairlog

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// TokenHash is the hash the log names a token by: the lowercase hex SHA-256 of the token.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// SeedSize is the size of a pre-queue's shuffle seed.
const SeedSize = 32

// NewSeed draws a fresh shuffle seed.
func NewSeed() []byte {
	b := make([]byte, SeedSize)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return b
}

// SeedCommit is the commitment to a seed the log records first: its lowercase hex SHA-256.
func SeedCommit(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// ShuffleKey is a pre-queue entry's key from the seed and its token hash: the first 8 bytes, big-endian,
// of HMAC-SHA256(seed, tokenHash), shifted right by 11, so it fits a Redis score exactly (53 bits). The
// opening places the entries in increasing key order.
func ShuffleKey(seed []byte, tokenHash string) uint64 {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(tokenHash))
	return binary.BigEndian.Uint64(m.Sum(nil)[:8]) >> 11
}
