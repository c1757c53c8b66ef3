// The retry schedule: each wait doubles, within its jitter, up to the cap; the last attempt gives up.

package webhook

import (
	"testing"
	"time"
)

func TestRetryWaitsDoubleUpToTheCap(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i, w := range want {
		for range 100 {
			if got := retryAfter(i+1, time.Second, time.Hour); got < w*8/10 || got > w*12/10 {
				t.Fatalf("retryAfter(%d) = %v, want %v ± 20%%", i+1, got, w)
			}
		}
	}
	for _, attempt := range []int{13, 14, 40, 1000} {
		if got := retryAfter(attempt, time.Second, time.Hour); got < 48*time.Minute || got > 72*time.Minute {
			t.Errorf("retryAfter(%d) = %v, want the cap, 1h ± 20%%", attempt, got)
		}
	}
}

func TestGivenUpAfterTheLastAttemptOrTheMaxAge(t *testing.T) {
	s := Settings{}.withDefaults()
	now := time.Now()
	if _, giveUp := s.nextAttempt(message{Attempts: 14, CreatedAt: now.Add(-time.Hour)}, now); giveUp {
		t.Errorf("given up after 14 of 15 attempts, want one more")
	}
	if _, giveUp := s.nextAttempt(message{Attempts: 15, CreatedAt: now.Add(-time.Hour)}, now); !giveUp {
		t.Errorf("not given up after 15 attempts")
	}
	if _, giveUp := s.nextAttempt(message{Attempts: 3, CreatedAt: now.Add(-24 * time.Hour)}, now); !giveUp {
		t.Errorf("not given up when the next attempt would come after 24h")
	}
}
