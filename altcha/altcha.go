// Package altcha speaks ALTCHA's proof-of-work protocol, version 2, as the altcha widget (v3) and the
// reference server library altcha-lib (2.8) do: it creates signed challenges, decodes the widget's payload,
// verifies a solution, and solves a challenge as the widget would. It imports nothing of waitroom and only
// the standard library.
//
// A v2 challenge is a set of parameters (a key derivation algorithm and its cost, a random nonce and salt,
// a key length, a key prefix, an optional expiry and data) signed with HMAC-SHA-256 over their canonical
// JSON. The client tries counters 0, 1, 2, ...: each attempt derives a key from the nonce followed by the
// counter (uint32, big-endian) as the password and the salt, and the first key that starts with the prefix
// is the solution. In the deterministic mode this package creates, the server picks the secret counter,
// derives its key, publishes the first half of it as the prefix and signs the whole key (keySignature), so
// the mean work a client does is the counter the server drew, and a check needs no derivation.
//
// What the two paths of Verify cost: with a keySignature and the key-signature secret (path 4a, the one a
// server that made its own challenges takes) a check is two HMAC-SHA-256 and no key derivation; without
// (path 4b) it derives the key once more, at the challenge's cost (1000 PBKDF2 iterations by default).
//
// What it does not do: replays are the caller's to refuse. Verify is stateless, and a payload verifies as
// often as it is shown until its challenge expires; a caller that must spend it once keeps the nonce (or
// the data that names it) until then.
//
// Files: altcha.go (the types and errors), create.go (Create), payload.go (the widget's payload),
// verify.go (Verify and the key derivations), solve.go (Solve), canonical.go (the JSON altcha-lib signs).
package altcha

import (
	"errors"
	"time"
)

// AlgorithmPBKDF2SHA256 is the key derivation Create uses: PBKDF2 with HMAC-SHA-256.
const AlgorithmPBKDF2SHA256 = "PBKDF2/SHA-256"

// The shape of the challenges Create makes, as altcha-lib's defaults make them.
const (
	keyLengthBytes = 32 // derived key
	prefixBytes    = keyLengthBytes / 2
	randomBytes    = 16 // nonce and salt each
	// MaxPayloadBytes bounds the widget's base64 payload DecodePayload accepts.
	MaxPayloadBytes = 4 << 10
)

// Parameters are a challenge's signed parameters, named as ALTCHA's JSON names them.
type Parameters struct {
	Algorithm string `json:"algorithm"`
	Cost      int    `json:"cost"` // KDF iterations of one attempt
	// Data is free metadata; a received challenge's data values that are not strings are not listed here,
	// but they are signed and verified as received.
	Data         map[string]string `json:"data,omitempty"`
	ExpiresAt    int64             `json:"expiresAt,omitempty"` // Unix seconds
	KeyLength    int               `json:"keyLength"`
	KeyPrefix    string            `json:"keyPrefix"`
	KeySignature string            `json:"keySignature,omitempty"`
	Nonce        string            `json:"nonce"`
	Salt         string            `json:"salt"`
}

// Challenge is what a server hands the widget: the parameters and their signature (hex HMAC-SHA-256).
type Challenge struct {
	Parameters Parameters `json:"parameters"`
	Signature  string     `json:"signature"`
}

// Solution is what the client found: the counter, the key it derived (lowercase hex) and how long it took.
type Solution struct {
	Counter    uint32  `json:"counter"`
	DerivedKey string  `json:"derivedKey"`
	Time       float64 `json:"time,omitempty"` // milliseconds
}

// Payload is what the widget sends back: the challenge as it received it, and its solution.
type Payload struct {
	Challenge Challenge `json:"challenge"`
	Solution  Solution  `json:"solution"`

	// Set by DecodePayload: the parameters' canonical JSON exactly as received (what the signature covers,
	// with any field Parameters does not name), the Parameters they decoded to (so that Verify notices a
	// change to Challenge.Parameters after decoding), and why the solution is malformed, if it is.
	signed        []byte
	decoded       Parameters
	solutionFault string
}

// Secrets are the two HMAC-SHA-256 keys: the challenge's signature and the derived key's signature.
type Secrets struct {
	Signature, KeySignature []byte
}

// Options say what challenge Create makes.
type Options struct {
	Cost      int       // PBKDF2 iterations per attempt (ALTCHA's cost), > 0
	Counter   uint32    // the secret counter the client must find (deterministic mode)
	ExpiresAt time.Time // zero: no expiry
	Data      map[string]string
}

// The errors Verify and DecodePayload return wrap one of these, with a short reason.
var (
	// ErrMalformed is a payload that is not the widget's base64 JSON of a challenge and a solution.
	ErrMalformed = errors.New("altcha: malformed payload")
	// ErrExpired is a challenge past its expiresAt.
	ErrExpired = errors.New("altcha: challenge expired")
	// ErrSignature is a challenge without a signature, or whose parameters it does not sign.
	ErrSignature = errors.New("altcha: invalid challenge signature")
	// ErrSolution is a solution that is malformed or does not solve the challenge.
	ErrSolution = errors.New("altcha: invalid solution")
	// ErrUnsupported is a signed challenge whose key derivation this package does not implement.
	ErrUnsupported = errors.New("altcha: unsupported algorithm")
)
