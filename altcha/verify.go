// verify.go checks a solution as altcha-lib's verifySolution does, and derives keys as its algorithms do.
package altcha

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// Verify checks p as altcha-lib's verifySolution does, in its order: the challenge's expiry against now
// (ErrExpired), its signature over the canonical JSON of the parameters as received (ErrSignature), the
// solution's form (ErrSolution: derivedKey lowercase hex of whole bytes, counter a uint32), then either
// the derived key against the challenge's keySignature (when it has one and s.KeySignature is set: no key
// derivation), or the key derived again from the counter, which must equal the solution's and start with
// the prefix (ErrSolution; ErrUnsupported for a key derivation this package does not know). It keeps no
// state: see the package comment on replays.
func Verify(p Payload, s Secrets, now time.Time) error {
	if len(s.Signature) == 0 {
		return errors.New("altcha: verify: no signature secret")
	}
	params := p.Challenge.Parameters
	if p.ExpiresAtPassed(now) {
		return fmt.Errorf("%w: at %d", ErrExpired, params.ExpiresAt)
	}
	if p.Challenge.Signature == "" {
		return fmt.Errorf("%w: none", ErrSignature)
	}
	want := hex.EncodeToString(sign(s.Signature, p.signedParameters()))
	if subtle.ConstantTimeCompare([]byte(p.Challenge.Signature), []byte(want)) != 1 {
		return fmt.Errorf("%w: it does not sign these parameters", ErrSignature)
	}
	if p.solutionFault != "" {
		return fmt.Errorf("%w: %s", ErrSolution, p.solutionFault)
	}
	if !isLowerHexBytes(p.Solution.DerivedKey) {
		return fmt.Errorf("%w: derivedKey is not lowercase hex", ErrSolution)
	}
	key, _ := hex.DecodeString(p.Solution.DerivedKey)
	if params.KeySignature != "" && len(s.KeySignature) > 0 {
		want := hex.EncodeToString(sign(s.KeySignature, key))
		if subtle.ConstantTimeCompare([]byte(params.KeySignature), []byte(want)) != 1 {
			return fmt.Errorf("%w: the key signature does not sign this key", ErrSolution)
		}
		return nil
	}
	return rederive(params, p.Solution, key)
}

// ExpiresAtPassed reports whether the challenge's expiresAt (Unix seconds) lies before now, compared as
// altcha-lib does (against milliseconds / 1000, so a challenge lives through its last second).
func (p Payload) ExpiresAtPassed(now time.Time) bool {
	at := p.Challenge.Parameters.ExpiresAt
	return at != 0 && float64(at) < float64(now.UnixMilli())/1000
}

// rederive is verifySolution's path 4b: the key of the solution's counter, derived again.
func rederive(params Parameters, sol Solution, key []byte) error {
	nonce, err := decodeHex(params.Nonce)
	if err != nil {
		return fmt.Errorf("%w: nonce: %v", ErrSolution, err)
	}
	salt, err := decodeHex(params.Salt)
	if err != nil {
		return fmt.Errorf("%w: salt: %v", ErrSolution, err)
	}
	derived, err := deriveKey(params, salt, password(nonce, sol.Counter))
	if err != nil {
		return err
	}
	keyMatches := subtle.ConstantTimeCompare(derived, key) == 1
	prefix, err := newPrefixMatcher(params.KeyPrefix)
	if err != nil {
		return err
	}
	if !keyMatches || !prefix.match(derived) {
		return fmt.Errorf("%w: counter %d does not give this key with prefix %q", ErrSolution, sol.Counter, params.KeyPrefix)
	}
	return nil
}

// prefixMatcher compares derived keys with a challenge's keyPrefix as altcha-lib does: an even-length
// prefix as bytes, an odd-length one as lowercase hex text. Verify and Solve share it so that a key Solve
// finds is one Verify accepts; Solve makes it once, not once per attempt.
type prefixMatcher struct {
	odd   bool
	text  string // the lowercase prefix, for an odd length
	bytes []byte // the prefix decoded, for an even length
}

// newPrefixMatcher refuses an empty prefix, and an even-length one that is not hex (ErrSolution).
func newPrefixMatcher(prefix string) (prefixMatcher, error) {
	if prefix == "" {
		return prefixMatcher{}, fmt.Errorf("%w: empty keyPrefix", ErrSolution)
	}
	if len(prefix)%2 == 1 {
		return prefixMatcher{odd: true, text: strings.ToLower(prefix)}, nil
	}
	want, err := decodeHex(prefix)
	if err != nil {
		return prefixMatcher{}, fmt.Errorf("%w: keyPrefix: %v", ErrSolution, err)
	}
	return prefixMatcher{bytes: want}, nil
}

// match reports whether key starts with the prefix.
func (m prefixMatcher) match(key []byte) bool {
	if m.odd {
		return strings.HasPrefix(hex.EncodeToString(key), m.text)
	}
	return bytes.HasPrefix(key, m.bytes)
}

// hasher is the hash of params' algorithm, once it is one deriveKey knows and, for PBKDF2, its cost and
// key length are positive: what deriveKey checks before deriving, so that Solve can check it without
// deriving a key.
func hasher(params Parameters) (func() hash.Hash, error) {
	var h func() hash.Hash
	switch strings.TrimPrefix(params.Algorithm, "PBKDF2/") {
	case "SHA-256":
		h = sha256.New
	case "SHA-384":
		h = sha512.New384
	case "SHA-512":
		h = sha512.New
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, params.Algorithm)
	}
	if strings.HasPrefix(params.Algorithm, "PBKDF2/") && (params.Cost < 1 || params.KeyLength < 1) {
		return nil, fmt.Errorf("%w: cost %d and keyLength %d must be positive", ErrSolution, params.Cost, params.KeyLength)
	}
	return h, nil
}

// deriveKey derives one attempt's key as altcha-lib's algorithms/pbkdf2.js and algorithms/sha.js do.
func deriveKey(params Parameters, salt, password []byte) ([]byte, error) {
	h, err := hasher(params)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(params.Algorithm, "PBKDF2/") {
		return pbkdf2.Key(h, string(password), salt, params.Cost, params.KeyLength)
	}
	return iteratedHash(h, params, salt, password), nil
}

// iteratedHash is sha.js: the hash of salt and password, hashed again cost-1 times (at least once), cut to
// keyLength (32 when absent) at the end.
func iteratedHash(h func() hash.Hash, params Parameters, salt, password []byte) []byte {
	d := h()
	d.Write(salt)
	d.Write(password)
	sum := d.Sum(nil)
	for i := 1; i < params.Cost; i++ {
		d.Reset()
		d.Write(sum)
		sum = d.Sum(sum[:0])
	}
	keyLength := params.KeyLength
	if keyLength == 0 {
		keyLength = keyLengthBytes
	}
	return sum[:max(0, min(keyLength, len(sum)))]
}

// decodeHex is altcha-lib's hexToBuffer: even length, either case.
func decodeHex(s string) ([]byte, error) {
	if len(s)%2 == 1 {
		return nil, errors.New("odd length")
	}
	return hex.DecodeString(s)
}

// isLowerHexBytes is the form verifySolution demands of a derivedKey: /^(?:[0-9a-f]{2})+$/.
func isLowerHexBytes(s string) bool {
	if s == "" || len(s)%2 == 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
