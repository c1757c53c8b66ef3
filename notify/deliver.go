// The deliverer: the loop that polls the outbox for due e-mails and sweeps what ended sales leave, and one
// attempt, sent over SMTP and recorded.

package notify

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

const (
	// recordWithin bounds writing an attempt's outcome, which is written even as the deliverer stops.
	recordWithin = 5 * time.Second
	// maxReasonBytes bounds the SMTP server's answer (or the error) kept as a failed attempt's last_error.
	maxReasonBytes = 512
)

// Run polls the outbox every Settings.Every (at once again after a full batch) and sweeps ended sales every
// Settings.SweepEvery, until ctx ends; it returns once every attempt under way has recorded its outcome.
// With e-mail off it only sweeps. Run it on every instance.
func (s *Service) Run(ctx context.Context) error {
	poll := time.NewTicker(s.s.Every)
	defer poll.Stop()
	sweep := time.NewTicker(s.s.SweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
			if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("notify: sweep", "err", err)
			}
		case <-poll.C:
			for s.Enabled() && ctx.Err() == nil {
				n, err := s.Poll(ctx)
				if err != nil && ctx.Err() == nil {
					s.log.Warn("notify: poll the outbox", "err", err)
				}
				if n < s.s.Batch {
					break
				}
			}
		}
	}
}

// Poll claims the e-mails due now (at most Settings.Batch), sends them (Settings.Parallel at a time),
// records each outcome, and reads how many are pending; it returns how many it claimed, those it moved on
// or gave up included.
func (s *Service) Poll(ctx context.Context) (int, error) {
	if !s.Enabled() {
		return 0, ErrOff
	}
	c, err := s.claim(ctx, s.now())
	if err != nil {
		return 0, err
	}
	s.metrics.Deferred.Add(float64(c.deferred))
	s.metrics.Failed.Add(float64(c.gaveUp))
	errs := make([]error, len(c.send)+1)
	slots := make(chan struct{}, s.s.Parallel)
	var wg sync.WaitGroup
	for i, m := range c.send {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = s.attempt(ctx, m)
		})
	}
	wg.Wait()
	pending, err := s.pending(ctx)
	if err == nil {
		s.metrics.Pending.Set(float64(pending))
	}
	errs[len(c.send)] = err
	return len(c.send) + c.deferred + c.gaveUp, errors.Join(errs...)
}

// attempt sends m once and records what came of it: sent when the server took it; otherwise due again
// after its back-off, or given up. An attempt cut short by the deliverer's stop gives its claim back
// uncounted.
func (s *Service) attempt(ctx context.Context, m message) error {
	msg, err := s.compose(m)
	if err == nil {
		err = s.server.send(ctx, s.s.TLSConfig, s.s.SendTimeout, msg)
	}
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWithin)
	defer cancel()
	now := s.now()
	switch {
	case err == nil:
		s.metrics.Attempts.WithLabelValues(outcomeSent).Inc()
		s.metrics.Sent.Inc()
		return s.sent(rec, m, now)
	case ctx.Err() != nil:
		return s.release(rec, m, now)
	}
	reason := clip(err.Error())
	next, giveUp := s.s.nextAttempt(m, now)
	if giveUp {
		s.metrics.Attempts.WithLabelValues(outcomeGaveUp).Inc()
		s.metrics.Failed.Inc()
		s.log.Warn("notify: given up", "id", m.ID, "screening", m.Screening, "attempts", m.Attempts, "reason", reason)
	} else {
		s.metrics.Attempts.WithLabelValues(outcomeFailedAttempt).Inc()
		s.log.Debug("notify: attempt failed", "id", m.ID, "attempts", m.Attempts, "next", next, "reason", reason)
	}
	return s.failed(rec, m, reason, next, giveUp)
}

// clip makes a reason fit last_error: valid UTF-8 without NULs, at most maxReasonBytes, cut on a rune
// boundary.
func clip(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= maxReasonBytes {
		return s
	}
	s = s[:maxReasonBytes]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
