package entry

// Benchmarks of what the proof of work costs the server per place: the check of a socket's payload
// (checkProof: decode and verify on the key-signature path, no key derivation), the issue of a challenge
// (altcha.Create as Policy.Challenge calls it, one key derivation at pow.iterations 1000 and 100), and
// the spend of a solution in Redis (queue.SpendSolution, on the real Redis when it answers, else the
// embedded one). They measure and record; the figures go to docs/benchmarks.md with the machine.

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/waitroom/waitroom/altcha"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

var benchPowSecrets = altcha.Secrets{
	Signature:    []byte("bench-pow-signature-0123456789abcdef"),
	KeySignature: []byte("bench-pow-key-signature-0123456789ab"),
}

// benchChallenge is a challenge of the screening as Policy.Challenge makes it, for pow.cost cost.
func benchChallenge(b *testing.B, screening string, iterations, cost int) altcha.Challenge {
	b.Helper()
	ch, err := altcha.Create(altcha.Options{
		Cost: iterations, Counter: DrawCounter(max(cost, 1)),
		ExpiresAt: time.Now().Add(5 * time.Minute), Data: map[string]string{"screening": screening, "cost": strconv.Itoa(cost)},
	}, benchPowSecrets)
	if err != nil {
		b.Fatal(err)
	}
	return ch
}

// BenchmarkCheckProof is the stateless check of a socket's altcha parameter at pow.iterations 1000: the
// key-signature path costs the same whatever the iterations, since it derives no key.
func BenchmarkCheckProof(b *testing.B) {
	ch := benchChallenge(b, "s1", 1000, 20)
	sol, err := altcha.Solve(context.Background(), ch, 1)
	if err != nil {
		b.Fatal(err)
	}
	payload := altcha.Payload{Challenge: ch, Solution: sol}.Encode()
	now := time.Now()
	if p, code, why := checkProof(benchPowSecrets, "s1", 20, payload, now); p == nil {
		b.Fatalf("checkProof = %s (%s), want a proof", code, why)
	}
	b.ReportAllocs()
	for b.Loop() {
		if p, code, _ := checkProof(benchPowSecrets, "s1", 20, payload, now); p == nil {
			b.Fatalf("checkProof refused with %s", code)
		}
	}
}

// BenchmarkChallengeIssue is Policy.Challenge's altcha.Create: one key derivation of iterations.
func BenchmarkChallengeIssue(b *testing.B) {
	for _, iterations := range []int{1000, 100} {
		b.Run(fmt.Sprintf("iterations=%d", iterations), func(b *testing.B) {
			opts := altcha.Options{Cost: iterations, Data: map[string]string{"screening": "s1"}}
			b.ReportAllocs()
			for b.Loop() {
				opts.Counter, opts.ExpiresAt = DrawCounter(1000), time.Now().Add(5*time.Minute)
				if _, err := altcha.Create(opts, benchPowSecrets); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSpendSolution is the mark a verified solution leaves in Redis when it buys a place: one SET NX
// with a TTL, a fresh id each time.
func BenchmarkSpendSolution(b *testing.B) {
	kind := testenv.Embedded
	for _, k := range testenv.Kinds(b) {
		kind = k // the real Redis when it answers
	}
	env := testenv.New(b, kind)
	q := queue.New(env.Redis, env.Prefix)
	ctx := context.Background()
	expires := time.Now().Add(5 * time.Minute)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		fresh, err := q.SpendSolution(ctx, "s1", fmt.Sprintf("%064x", i), expires)
		if err != nil || !fresh {
			b.Fatalf("SpendSolution = %v, %v; want a fresh spend", fresh, err)
		}
	}
	b.Logf("backend: %s", kind)
}
