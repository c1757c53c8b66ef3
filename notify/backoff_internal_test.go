package notify

import (
	"testing"
	"time"
)

// The back-off doubles from the first wait up to its bound: 1 s, 2 s, 4 s, … 5 min.
func TestRetryAfterDoublesUpToTheBound(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := retryAfter(i+1, defaultFirstRetry, defaultMaxRetry); got != w {
			t.Errorf("retryAfter(%d) = %v, want %v", i+1, got, w)
		}
	}
}

// An e-mail is given up after its 10th attempt, or when its next attempt would come after its deadline.
func TestNextAttemptGivesUpAfterTheLastOrPastTheDeadline(t *testing.T) {
	s := Settings{}.withDefaults()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if next, giveUp := s.nextAttempt(message{Attempts: 9}, now); giveUp || !next.Equal(now.Add(256*time.Second)) {
		t.Errorf("after the 9th attempt: next %v, give up %v; want %v, false", next, giveUp, now.Add(256*time.Second))
	}
	if _, giveUp := s.nextAttempt(message{Attempts: 10}, now); !giveUp {
		t.Errorf("after the 10th attempt: not given up")
	}
	deadline := now.Add(3 * time.Second)
	if _, giveUp := s.nextAttempt(message{Attempts: 2, Deadline: &deadline}, now); giveUp {
		t.Errorf("a retry in 2 s with the deadline in 3 s is given up")
	}
	if _, giveUp := s.nextAttempt(message{Attempts: 3, Deadline: &deadline}, now); !giveUp {
		t.Errorf("a retry in 4 s with the deadline in 3 s is not given up")
	}
}
