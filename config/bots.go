// The settings against bots: the proof of work a screening may require before a socket gets a place
// (pow.*), and the quiet treatment of what looks like a bot (bots.*), with their checks.

package config

import (
	"fmt"
	"time"
)

// Pow is the ALTCHA proof of work a socket solves before it gets a place in a line that requires one.
type Pow struct {
	// Cost is the mean number of key derivations a client must try (the secret counter is drawn from
	// [cost/2, cost*3/2]) for the screenings without a cost of their own; 0 turns the proof of work off.
	Cost int `koanf:"cost"`
	// Iterations is the PBKDF2-SHA-256 iteration count of one derivation (ALTCHA's parameters.cost); the
	// server derives one key per challenge it issues.
	Iterations int `koanf:"iterations"`
	// Expires is a challenge's lifetime: a solution is good until then, and once.
	Expires time.Duration `koanf:"expires"`
	// Secret keys the challenges' HMAC signatures, shared by every instance (at least 32 characters); empty:
	// derived from the first pass key (or pass.secret), which every instance shares already.
	Secret string `koanf:"secret"`
}

// Bots is the "infinite queue": a socket that looks like a bot (over its address's limits, or from an
// address that keeps failing the challenge or the access code) is told a place in a line that never moves,
// and held, instead of being refused, so that it learns nothing from being caught. A client that sent a
// valid solution is never held.
type Bots struct {
	// InfiniteQueue turns the treatment on; off, such sockets are refused with their error as before.
	InfiniteQueue bool `koanf:"infinite_queue"`
	// FailureLimit is how many refused proofs of work or codes an address may have in a minute before its
	// sockets are held.
	FailureLimit int `koanf:"failure_limit"`
	// Hold is how long a held socket is kept before it is closed (1013, try again later).
	Hold time.Duration `koanf:"hold"`
	// MaxHeld bounds the sockets one instance holds; beyond it they are refused as before.
	MaxHeld int `koanf:"max_held"`
}

// MaxPowCost bounds pow.cost (and a screening's own): 100 million derivations is hours in a browser.
const MaxPowCost = 100_000_000

func (p Pow) validate() []error {
	var errs []error
	if p.Cost < 0 || p.Cost > MaxPowCost {
		errs = append(errs, fmt.Errorf("pow.cost must be 0 (off) to %d, got %d", MaxPowCost, p.Cost))
	}
	if p.Iterations < 1 || p.Iterations > 1_000_000 {
		errs = append(errs, fmt.Errorf("pow.iterations must be 1 to 1000000, got %d", p.Iterations))
	}
	if p.Expires < 10*time.Second || p.Expires > time.Hour {
		errs = append(errs, fmt.Errorf("pow.expires must be 10s to 1h, got %s", p.Expires))
	}
	if p.Secret != "" && len(p.Secret) < 32 {
		errs = append(errs, fmt.Errorf("pow.secret must be at least 32 characters, got %d", len(p.Secret)))
	}
	return errs
}

func (b Bots) validate() []error {
	var errs []error
	if b.FailureLimit < 1 {
		errs = append(errs, fmt.Errorf("bots.failure_limit must be at least 1, got %d", b.FailureLimit))
	}
	if b.Hold <= 0 {
		errs = append(errs, fmt.Errorf("bots.hold must be positive, got %s", b.Hold))
	}
	if b.MaxHeld < 0 {
		errs = append(errs, fmt.Errorf("bots.max_held must not be negative, got %d", b.MaxHeld))
	}
	return errs
}
