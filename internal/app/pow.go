// The proof of work's settings for the entry policy (pow.*), and its two HMAC keys, derived from pow.secret or,
// without one, from the pass key every instance shares already.

package app

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"

	"github.com/waitroom/waitroom/altcha"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/entry"
)

// PowSettings is pow.* for the entry policy. The challenges' keys come from pow.secret when it is set; otherwise from
// the first pass key (or pass.secret), so that every instance, which must share those, signs and checks
// the same challenges without one more secret to set. A pass key's rotation then changes them: challenges
// in flight (pow.expires at most) are refused, and their clients solve new ones.
func PowSettings(cfg config.Config) (entry.Pow, error) {
	root := cfg.Pow.Secret
	if root == "" {
		entries, err := cfg.Pass.KeyEntries()
		if err != nil {
			return entry.Pow{}, fmt.Errorf("app: %w", err)
		}
		root = cfg.Pass.Secret
		if len(entries) > 0 {
			root = entries[0]
		}
	}
	if root == "" {
		return entry.Pow{}, fmt.Errorf("app: no secret for the proof of work: set pow.secret (WAITROOM_POW_SECRET) or pass.keys")
	}
	key := func(purpose string) ([]byte, error) {
		return hkdf.Key(sha256.New, []byte(root), nil, "waitroom altcha "+purpose, 32)
	}
	sig, err := key("challenge signature")
	if err != nil {
		return entry.Pow{}, fmt.Errorf("app: pow key: %w", err)
	}
	keySig, err := key("key signature")
	if err != nil {
		return entry.Pow{}, fmt.Errorf("app: pow key: %w", err)
	}
	return entry.Pow{Cost: cfg.Pow.Cost, Iterations: cfg.Pow.Iterations, Expires: cfg.Pow.Expires,
		Secrets: altcha.Secrets{Signature: sig, KeySignature: keySig}}, nil
}
