// solve.go finds a challenge's counter as the widget does, over several goroutines.
package altcha

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// ctxCheckEvery is how many attempts a worker makes between looks at its context.
const ctxCheckEvery = 4

// Solve finds the counter as the widget does (counters from 0 upward, uint32 big-endian appended to the
// nonce bytes as the password, the salt bytes as salt), split over workers goroutines interleaved (worker
// i tries i, i+workers, ...), until ctx ends (then ctx.Err()). The first worker to find a key with the
// prefix wins, as among the widget's web workers. Time is the milliseconds it took, to a tenth, like the
// widget's.
func Solve(ctx context.Context, c Challenge, workers int) (Solution, error) {
	params := c.Parameters
	if err := checkPrefix(params.KeyPrefix, params.KeyLength); err != nil {
		return Solution{}, err
	}
	nonce, err := decodeHex(params.Nonce)
	if err != nil {
		return Solution{}, fmt.Errorf("altcha: solve: nonce: %w", err)
	}
	salt, err := decodeHex(params.Salt)
	if err != nil {
		return Solution{}, fmt.Errorf("altcha: solve: salt: %w", err)
	}
	if _, err := hasher(params); err != nil {
		return Solution{}, fmt.Errorf("altcha: solve: %w", err)
	}
	prefix, err := newPrefixMatcher(params.KeyPrefix)
	if err != nil {
		return Solution{}, fmt.Errorf("altcha: solve: %w", err)
	}
	workers = max(1, workers)
	start := time.Now()
	search, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg     sync.WaitGroup
		once   sync.Once
		found  Solution
		failed error
	)
	for i := range workers {
		wg.Go(func() {
			sol, ok, err := solveFrom(search, params, prefix, nonce, salt, uint32(i), uint32(workers))
			if ok || err != nil {
				once.Do(func() { found, failed = sol, err; stop() })
			}
		})
	}
	wg.Wait()
	switch {
	case failed != nil:
		return Solution{}, fmt.Errorf("altcha: solve: %w", failed)
	case found.DerivedKey != "":
		found.Time = math.Floor(float64(time.Since(start).Microseconds())/100) / 10
		return found, nil
	case ctx.Err() != nil:
		return Solution{}, ctx.Err()
	}
	return Solution{}, errors.New("altcha: solve: no counter up to 2^32-1 gives the prefix")
}

// solveFrom is one worker: counters first, first+step, ... until one gives the prefix, the counters run
// out or ctx ends. Its error is a key derivation that failed (hasher passed, so not for the parameters
// Solve checks): it fails for every counter alike, so the search ends.
func solveFrom(ctx context.Context, params Parameters, prefix prefixMatcher, nonce, salt []byte, first, step uint32) (Solution, bool, error) {
	pw := password(nonce, 0)
	for counter, tries := uint64(first), 0; counter <= math.MaxUint32; counter, tries = counter+uint64(step), tries+1 {
		if tries%ctxCheckEvery == 0 && ctx.Err() != nil {
			return Solution{}, false, nil
		}
		n := len(nonce)
		pw[n], pw[n+1], pw[n+2], pw[n+3] = byte(counter>>24), byte(counter>>16), byte(counter>>8), byte(counter)
		key, err := deriveKey(params, salt, pw)
		if err != nil {
			return Solution{}, false, err
		}
		if prefix.match(key) {
			return Solution{Counter: uint32(counter), DerivedKey: hex.EncodeToString(key)}, true, nil
		}
	}
	return Solution{}, false, nil
}

// checkPrefix refuses a prefix no key can match, or every key does, as solveChallenge does.
func checkPrefix(prefix string, keyLength int) error {
	if prefix == "" || strings.Trim(strings.ToLower(prefix), "0123456789abcdef") != "" {
		return fmt.Errorf("altcha: solve: keyPrefix %q is not a non-empty hex string", prefix)
	}
	if keyLength == 0 {
		keyLength = keyLengthBytes
	}
	if len(prefix) > 2*keyLength {
		return fmt.Errorf("altcha: solve: keyPrefix of %d hex digits is longer than the %d-byte key", len(prefix), keyLength)
	}
	return nil
}
