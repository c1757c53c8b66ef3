// bench_test.go measures creating, verifying and solving challenges.
package altcha

import (
	"context"
	"fmt"
	"testing"
	"time"
)

var benchSecrets = Secrets{Signature: []byte("bench-signature"), KeySignature: []byte("bench-key")}

func benchPayload(b *testing.B, cost int, counter uint32) Payload {
	b.Helper()
	c, err := Create(Options{Cost: cost, Counter: counter, ExpiresAt: farFuture, Data: map[string]string{"screening": "scr-1"}}, benchSecrets)
	if err != nil {
		b.Fatal(err)
	}
	sol, err := Solve(context.Background(), c, 1)
	if err != nil {
		b.Fatal(err)
	}
	p, err := DecodePayload(Payload{Challenge: c, Solution: sol}.Encode())
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkVerify is the server's check per place: decoded payload, key signature, no derivation.
func BenchmarkVerify(b *testing.B) {
	p := benchPayload(b, 1000, 3)
	encoded := p.Encode()
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if err := Verify(p, benchSecrets, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode+verify", func(b *testing.B) {
		for b.Loop() {
			q, err := DecodePayload(encoded)
			if err != nil {
				b.Fatal(err)
			}
			if err := Verify(q, benchSecrets, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkVerifyRederive is the check without the key-signature secret: one PBKDF2 at cost 1000.
func BenchmarkVerifyRederive(b *testing.B) {
	p := benchPayload(b, 1000, 3)
	s := Secrets{Signature: benchSecrets.Signature}
	for b.Loop() {
		if err := Verify(p, s, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreate(b *testing.B) {
	for _, cost := range []int{1000, 100} {
		b.Run(fmt.Sprintf("cost=%d", cost), func(b *testing.B) {
			o := Options{Cost: cost, Counter: 500, ExpiresAt: time.Now().Add(5 * time.Minute), Data: map[string]string{"screening": "scr-1"}}
			for b.Loop() {
				if _, err := Create(o, benchSecrets); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSolve finds counter 20 at cost 100: 21 derivations on one worker.
func BenchmarkSolve(b *testing.B) {
	c, err := Create(Options{Cost: 100, Counter: 20}, benchSecrets)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Solve(context.Background(), c, 1); err != nil {
			b.Fatal(err)
		}
	}
}
