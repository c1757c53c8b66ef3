// The checks of the pass keys (pass.keys and pass.keys_file), and the one place that reads them together;
// each entry is read by package pass, the one reader of a key.

package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/waitroom/waitroom/pass"
)

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

// checkPassKey reads "kid:seed" as the server will (pass.ParseKey: kid 1 to 64 of A-Z a-z 0-9 . _ -, the
// seed 32 bytes in base64, standard or URL alphabet, padded or not) and returns its kid, or what is wrong
// with it.
func checkPassKey(entry string) (string, error) {
	k, err := pass.ParseKey(entry)
	var bad *pass.KeyError
	if errors.As(err, &bad) {
		return "", errors.New(bad.Problem) // where the entry is says it is a pass key
	}
	if err != nil {
		return "", err
	}
	return k.ID, nil
}

// validate names what cannot work in the pass keys.
func (p Pass) validate() []error {
	if _, err := p.KeyEntries(); err != nil {
		return []error{err}
	}
	return nil
}
