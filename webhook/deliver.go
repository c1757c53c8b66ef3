// The Deliverer: the loop that polls the outbox for due webhooks, and one attempt, signed and sent.

package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	// leaseAttempts: a claimed webhook's lease lasts this many attempt timeouts, so one whose deliverer died
	// is tried again by another within that of its claim, and a live one records its outcome long before.
	leaseAttempts = 3
	// recordWithin bounds writing an attempt's outcome, which is written even as the deliverer stops.
	recordWithin = 5 * time.Second
	// maxReasonBytes bounds the receiver's answer (or the error) kept as a failed attempt's last_error.
	maxReasonBytes = 512
	// drainBytes is how much of an answer is read to let its connection be used again.
	drainBytes = 64 << 10
)

// Deliverer sends the outbox's webhooks to one URL. Run it on every instance: they share the work.
type Deliverer struct {
	outbox  *Outbox
	s       Settings
	signer  *standardwebhooks.Webhook
	signErr error // a secret the library could not read: Run returns it
	metrics *Metrics
	log     *slog.Logger
}

// New is a deliverer of o's webhooks as s says (zero fields: the defaults), counting into m (nil: counted
// nowhere) and telling log of the webhooks it gives up.
func New(o *Outbox, s Settings, m *Metrics, log *slog.Logger) *Deliverer {
	if m == nil {
		m = NewMetrics(nil)
	}
	d := &Deliverer{outbox: o, s: s.withDefaults(), metrics: m, log: log}
	d.signer, d.signErr = standardwebhooks.NewWebhook(s.Secret)
	if d.signErr != nil {
		d.signErr = fmt.Errorf("webhook: webhooks.secret: %w", d.signErr)
	}
	return d
}

// Run polls the outbox every s.Every until ctx ends, at once again after a full batch, and returns once
// every attempt under way has recorded its outcome.
func (d *Deliverer) Run(ctx context.Context) error {
	if d.signErr != nil {
		return d.signErr
	}
	t := time.NewTicker(d.s.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for ctx.Err() == nil {
			n, err := d.Poll(ctx)
			if err != nil && ctx.Err() == nil {
				d.log.Warn("webhook: poll the outbox", "err", err)
			}
			if n < d.s.Batch {
				break
			}
		}
	}
}

// Poll claims the webhooks due now (at most s.Batch), sends them at once, records each outcome, and reads
// how many are pending; it returns how many it claimed.
func (d *Deliverer) Poll(ctx context.Context) (int, error) {
	if d.signErr != nil {
		return 0, d.signErr
	}
	now := time.Now()
	due, err := d.outbox.claim(ctx, now, now.Add(leaseAttempts*d.s.AttemptTimeout), d.s.Batch)
	if err != nil {
		return 0, err
	}
	errs := make([]error, len(due)+1)
	var wg sync.WaitGroup
	for i, m := range due {
		wg.Go(func() { errs[i] = d.attempt(ctx, m) })
	}
	wg.Wait()
	pending, err := d.outbox.Pending(ctx)
	if err == nil {
		d.metrics.Pending.Set(float64(pending))
	}
	errs[len(due)] = err
	return len(due), errors.Join(errs...)
}

// attempt sends m once and records what came of it: delivered on a 2xx; otherwise due again after its
// back-off, or given up. An attempt cut short by the deliverer's stop gives its claim back uncounted.
func (d *Deliverer) attempt(ctx context.Context, m message) error {
	status, reason := d.send(ctx, m)
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWithin)
	defer cancel()
	now := time.Now()
	switch {
	case status >= 200 && status < 300:
		d.metrics.Deliveries.WithLabelValues(outcomeDelivered).Inc()
		return d.outbox.delivered(rec, m, status, now)
	case status == 0 && ctx.Err() != nil:
		return d.outbox.release(rec, m, now)
	}
	next, giveUp := d.s.nextAttempt(m, now)
	if giveUp {
		d.metrics.Deliveries.WithLabelValues(outcomeGaveUp).Inc()
		d.log.Warn("webhook: given up", "msg_id", m.MsgID, "type", m.Type, "attempts", m.Attempts, "reason", reason)
	} else {
		d.metrics.Deliveries.WithLabelValues(outcomeFailedAttempt).Inc()
		d.log.Debug("webhook: attempt failed", "msg_id", m.MsgID, "attempts", m.Attempts, "next", next, "reason", reason)
	}
	return d.outbox.failed(rec, m, status, reason, next, giveUp, now)
}

// send POSTs m's payload to the URL, signed for this attempt's time, and returns the answer's status (0:
// none came in s.AttemptTimeout) and, unless it is a 2xx, why it failed.
func (d *Deliverer) send(ctx context.Context, m message) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, d.s.AttemptTimeout)
	defer cancel()
	body := []byte(m.Payload)
	at := time.Now()
	signature, err := d.signer.Sign(m.MsgID, at, body)
	if err != nil {
		return 0, clip("sign: " + err.Error())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.s.URL, bytes.NewReader(body))
	if err != nil {
		return 0, clip(err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "waitroom-webhooks")
	req.Header.Set(standardwebhooks.HeaderWebhookID, m.MsgID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, signature)
	resp, err := d.s.Client.Do(req)
	if err != nil {
		return 0, clip(err.Error())
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxReasonBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, clip(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(answer)))
}

// clip makes a reason fit last_error: valid UTF-8 without NULs (PostgreSQL's text takes no other), at most
// maxReasonBytes, cut on a rune boundary.
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
