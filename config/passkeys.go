// The checks of the pass keys (pass.keys and pass.keys_file), and the one place that reads them together.

package config

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// kidPattern is what a pass key's kid may be (queue.ParsePassKey reads the same).
var kidPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// passSeedSize is an Ed25519 seed's length in bytes.
const passSeedSize = 32

// KeyEntries returns the pass keys, each "kid:seed": pass.keys in order (blanks skipped), then the lines of
// pass.keys_file (blank lines and # comments skipped). The first signs. An entry that cannot be read, or a
// kid listed twice, is an error naming where it is, never the seed.
func (p Pass) KeyEntries() ([]string, error) {
	var out []string
	var errs []error
	seen := map[string]string{}
	add := func(where, entry string) {
		kid, err := checkPassKey(entry)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			return
		}
		if first, dup := seen[kid]; dup {
			errs = append(errs, fmt.Errorf("%s: kid %q is listed twice (first at %s)", where, kid, first))
			return
		}
		seen[kid] = where
		out = append(out, entry)
	}
	n := 0
	for _, e := range p.Keys {
		if e = strings.TrimSpace(e); e != "" {
			n++
			add(fmt.Sprintf("pass.keys entry %d", n), e)
		}
	}
	if p.KeysFile != "" {
		b, err := os.ReadFile(p.KeysFile)
		if err != nil {
			return nil, fmt.Errorf("pass.keys_file: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for line := 1; sc.Scan(); line++ {
			if e := strings.TrimSpace(sc.Text()); e != "" && !strings.HasPrefix(e, "#") {
				add(fmt.Sprintf("pass.keys_file %s line %d", p.KeysFile, line), e)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("pass.keys_file %s: %w", p.KeysFile, err)
		}
		if len(out) == 0 && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("pass.keys_file %s holds no key", p.KeysFile))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// checkPassKey reads "kid:seed" far enough to know it is one (kid: 1 to 64 of A-Z a-z 0-9 . _ -; the seed:
// 32 bytes in base64, standard or URL alphabet, padded or not) and returns its kid.
func checkPassKey(entry string) (string, error) {
	kid, seed, ok := strings.Cut(entry, ":")
	if !ok {
		return "", errors.New("want kid:base64-seed")
	}
	if !kidPattern.MatchString(kid) {
		if len(kid) > 64 {
			kid = kid[:64] + "…"
		}
		return "", fmt.Errorf("kid %q: want 1 to 64 of A-Z a-z 0-9 . _ -", kid)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(seed); err == nil {
			if len(b) != passSeedSize {
				return "", fmt.Errorf("kid %q: the seed is %d bytes, want %d (openssl rand -base64 32)", kid, len(b), passSeedSize)
			}
			return kid, nil
		}
	}
	return "", fmt.Errorf("kid %q: the seed is not base64", kid)
}

// validate names what cannot work in the pass keys.
func (p Pass) validate() []error {
	if _, err := p.KeyEntries(); err != nil {
		return []error{err}
	}
	return nil
}
