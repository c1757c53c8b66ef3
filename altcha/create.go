// create.go makes signed challenges in ALTCHA's deterministic mode, as altcha-lib's createChallenge does.
package altcha

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
)

// Create makes a signed challenge in deterministic mode: random 16-byte nonce and salt (hex), PBKDF2/SHA-256,
// keyLength 32, the derived key of Counter, keyPrefix = its first 16 bytes in hex, keySignature =
// HMAC(KeySignature secret, derived key bytes) when that secret is set, signature = HMAC(Signature secret,
// canonical JSON of the parameters): byte for byte what altcha-lib's createChallenge and signChallenge make
// from the same nonce and salt. Its cost is one key derivation.
func Create(o Options, s Secrets) (Challenge, error) {
	var random [2 * randomBytes]byte
	if _, err := rand.Read(random[:]); err != nil {
		return Challenge{}, fmt.Errorf("altcha: create: %w", err)
	}
	return create(o, s, random[:randomBytes], random[randomBytes:])
}

// create is Create with the nonce and salt given, so that a test can rebuild a reference challenge.
func create(o Options, s Secrets, nonce, salt []byte) (Challenge, error) {
	if o.Cost < 1 {
		return Challenge{}, fmt.Errorf("altcha: create: cost %d, want at least 1", o.Cost)
	}
	if len(s.Signature) == 0 {
		return Challenge{}, errors.New("altcha: create: no signature secret")
	}
	p := Parameters{
		Algorithm: AlgorithmPBKDF2SHA256,
		Cost:      o.Cost,
		KeyLength: keyLengthBytes,
		Nonce:     hex.EncodeToString(nonce),
		Salt:      hex.EncodeToString(salt),
	}
	if len(o.Data) > 0 {
		p.Data = maps.Clone(o.Data)
	}
	if !o.ExpiresAt.IsZero() {
		if p.ExpiresAt = o.ExpiresAt.Unix(); p.ExpiresAt <= 0 {
			return Challenge{}, fmt.Errorf("altcha: create: expiry %v is not after 1970", o.ExpiresAt)
		}
	}
	key, err := deriveKey(p, salt, password(nonce, o.Counter))
	if err != nil {
		return Challenge{}, fmt.Errorf("altcha: create: %w", err)
	}
	p.KeyPrefix = hex.EncodeToString(key[:prefixBytes])
	if len(s.KeySignature) > 0 {
		p.KeySignature = hex.EncodeToString(sign(s.KeySignature, key))
	}
	return Challenge{Parameters: p, Signature: hex.EncodeToString(sign(s.Signature, canonicalParameters(p)))}, nil
}

// sign is the HMAC-SHA-256 of data under key.
func sign(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

// password is what one attempt derives from: the nonce's bytes, then the counter as a big-endian uint32.
func password(nonce []byte, counter uint32) []byte {
	return append(append(make([]byte, 0, len(nonce)+4), nonce...),
		byte(counter>>24), byte(counter>>16), byte(counter>>8), byte(counter))
}

// canonicalParameters is the canonical JSON of p as the widget would send it back: the fields Parameters
// omits when empty are absent.
func canonicalParameters(p Parameters) []byte {
	o := object{
		{"algorithm", p.Algorithm},
		{"cost", float64(p.Cost)},
		{"keyLength", float64(p.KeyLength)},
		{"keyPrefix", p.KeyPrefix},
		{"nonce", p.Nonce},
		{"salt", p.Salt},
	}
	if len(p.Data) > 0 {
		data := make(object, 0, len(p.Data))
		for k, v := range p.Data {
			data = append(data, member{k, v})
		}
		o = append(o, member{"data", data})
	}
	if p.ExpiresAt != 0 {
		o = append(o, member{"expiresAt", float64(p.ExpiresAt)})
	}
	if p.KeySignature != "" {
		o = append(o, member{"keySignature", p.KeySignature})
	}
	return canonicalJSON(o)
}
