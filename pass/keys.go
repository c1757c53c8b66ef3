// Pass keys: the Ed25519 keys that sign passes (Key), read from "kid:base64 seed" entries (ParseKey, which
// config calls to check its settings), drawn at random for a process of its own (GenerateKey), and their
// public halves as a JWK Set (jwkSet), which is what /.well-known/jwks.json serves.

package pass

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// Key is one Ed25519 key that signs or checks passes, named by its key id (the JWT header's kid).
type Key struct {
	ID      string
	Private ed25519.PrivateKey
}

// ErrBadKey is every pass key entry that cannot be read.
var ErrBadKey = errors.New("bad pass key")

// KeyError is an entry ParseKey cannot read. Problem says what is wrong with it, naming the kid but never the
// seed, in words a person who set the entry reads (config shows it beside where the entry is). It is
// ErrBadKey.
type KeyError struct {
	Problem string
}

func (e *KeyError) Error() string        { return "pass: " + ErrBadKey.Error() + ": " + e.Problem }
func (e *KeyError) Is(target error) bool { return target == ErrBadKey }

// kidPattern is what a key id may be: short, and safe in a header, a URL and a log line.
var kidPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParseKey reads "kid:seed", the seed being the base64 (standard or URL alphabet, padded or not) of a
// 32-byte Ed25519 seed. Its errors are a *KeyError, which names the kid but never the seed.
func ParseKey(entry string) (Key, error) {
	kid, seed, ok := strings.Cut(strings.TrimSpace(entry), ":")
	if !ok {
		return Key{}, &KeyError{Problem: "want kid:base64-seed"}
	}
	if !kidPattern.MatchString(kid) {
		return Key{}, &KeyError{Problem: fmt.Sprintf("kid %q: want 1 to 64 of A-Z a-z 0-9 . _ -", truncate(kid, 64))}
	}
	raw, err := decodeSeed(seed)
	if err != nil {
		return Key{}, &KeyError{Problem: fmt.Sprintf("kid %q: %v", kid, err)}
	}
	return Key{ID: kid, Private: ed25519.NewKeyFromSeed(raw)}, nil
}

// decodeSeed reads a 32-byte seed in any of base64's four spellings.
func decodeSeed(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != ed25519.SeedSize {
				return nil, fmt.Errorf("the seed is %d bytes, want %d (openssl rand -base64 32)", len(b), ed25519.SeedSize)
			}
			return b, nil
		}
	}
	return nil, errors.New("the seed is not base64")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// GenerateKey draws a new key named kid (for a process that has none configured).
func GenerateKey(kid string) (Key, error) {
	if !kidPattern.MatchString(kid) {
		return Key{}, fmt.Errorf("pass: %w: kid %q: want 1 to 64 of A-Z a-z 0-9 . _ -", ErrBadKey, truncate(kid, 64))
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Key{}, fmt.Errorf("pass: generate a key: %w", err)
	}
	return Key{ID: kid, Private: priv}, nil
}

// String is the key as ParseKey reads it: "kid:seed" (the seed in standard base64). It holds the
// private key: never log it.
func (k Key) String() string {
	return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Private.Seed())
}

// jwkSet is the public halves of keys as a JWK Set (RFC 7517): kty OKP, crv Ed25519, x, kid, alg EdDSA,
// use sig; {"keys":[]} for none.
func jwkSet(keys []Key) ([]byte, error) {
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(keys))}
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{
			Key: k.Private.Public(), KeyID: k.ID, Algorithm: string(jose.EdDSA), Use: "sig",
		})
	}
	b, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("pass: the JWK Set: %w", err)
	}
	return b, nil
}
