// The run's webhook receiver: the server's webhooks.url points at it; it records every delivery by its
// webhook-id (a retry of one message counts once) and checks its Standard Webhooks signature.

package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	// maxWebhookBody bounds one delivery's body.
	maxWebhookBody = 1 << 20
	// receiverShutdown bounds the receiver's stop.
	receiverShutdown = 5 * time.Second
)

// Webhooks is what the run's receiver got, and how it compares with the server's outbox.
type Webhooks struct {
	// Listen is the receiver's address ("": no receiver, nothing below was measured).
	Listen string `json:"listen,omitempty"`
	// Expected says missing or badly signed deliveries fail the run.
	Expected bool `json:"expected"`
	// Verified says each signature was checked with the secret.
	Verified bool `json:"signatures_verified"`
	// Received counts distinct webhook-ids; Deliveries every request (retries included); BadSignature the
	// requests refused for their signature or headers.
	Received     int            `json:"received"`
	Deliveries   int            `json:"deliveries"`
	BadSignature int            `json:"bad_signature"`
	ByType       map[string]int `json:"by_type,omitempty"`
	// Outbox counts the server's outbox rows (-1: not read); OutboxDelivered those it marks delivered;
	// Missing the outbox's messages the receiver never got.
	Outbox          int `json:"outbox"`
	OutboxDelivered int `json:"outbox_delivered"`
	Missing         int `json:"missing"`
	// Note says in words what the figures mean (no delivery yet, say).
	Note string `json:"note,omitempty"`
}

// receiver is the HTTP server behind Check.WebhookListen.
type receiver struct {
	wh  *standardwebhooks.Webhook // nil: signatures not checked
	srv *http.Server
	ln  net.Listener

	mu      sync.Mutex
	seen    map[string]string // webhook-id -> type
	total   int
	badSigs int
}

// startReceiver listens on addr and serves deliveries until stop. An empty secret checks no signature.
func startReceiver(addr, secret string) (*receiver, error) {
	rc := &receiver{seen: map[string]string{}}
	if secret != "" {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return nil, fmt.Errorf("swarm: webhook secret: %w", err)
		}
		rc.wh = wh
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("swarm: webhook receiver: %w", err)
	}
	rc.ln = ln
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rc.srv.Serve(ln) }() // ends with stop's Shutdown
	return rc, nil
}

func (rc *receiver) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), receiverShutdown)
	defer cancel()
	_ = rc.srv.Shutdown(ctx)
}

// ServeHTTP records one delivery: 204 when it is well signed (or signatures are not checked), 401 when not,
// so that the server retries it as it would at a real endpoint.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxWebhookBody))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	id := req.Header.Get(standardwebhooks.HeaderWebhookID)
	verr := error(nil)
	if id == "" {
		verr = errors.New("no webhook-id")
	} else if rc.wh != nil {
		verr = rc.wh.Verify(body, req.Header)
	}
	var ev struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(body, &ev)
	rc.mu.Lock()
	rc.total++
	if verr != nil {
		rc.badSigs++
	} else {
		rc.seen[id] = ev.Type
	}
	rc.mu.Unlock()
	if verr != nil {
		http.Error(w, verr.Error(), http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// has reports whether every id was received.
func (rc *receiver) has(ids []string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, id := range ids {
		if _, ok := rc.seen[id]; !ok {
			return false
		}
	}
	return true
}

// report counts what came, against the outbox's message ids (nil: the outbox was not read).
func (rc *receiver) report(check Check, outbox []string, delivered int) Webhooks {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	w := Webhooks{Listen: check.WebhookListen, Expected: check.WebhooksExpected, Verified: rc.wh != nil,
		Received: len(rc.seen), Deliveries: rc.total, BadSignature: rc.badSigs, Outbox: -1}
	for _, typ := range rc.seen {
		if w.ByType == nil {
			w.ByType = map[string]int{}
		}
		w.ByType[typ]++
	}
	if outbox != nil {
		w.Outbox, w.OutboxDelivered = len(outbox), delivered
		for _, id := range outbox {
			if _, ok := rc.seen[id]; !ok {
				w.Missing++
			}
		}
	}
	switch {
	case w.Received == 0 && w.Outbox > 0:
		w.Note = fmt.Sprintf("0 received: the outbox holds %d messages, %d marked delivered; nothing delivered them here", w.Outbox, w.OutboxDelivered)
	case w.Received == 0 && w.Outbox == 0:
		w.Note = "0 received, and the outbox is empty: is webhooks.url set on the server?"
	case w.Received == 0:
		w.Note = "0 received"
	}
	return w
}

// problems are the receiver's findings that fail a run that expected the deliveries.
func (w Webhooks) problems() []string {
	if w.Listen == "" || !w.Expected {
		return nil
	}
	var out []string
	if w.Missing > 0 {
		out = append(out, fmt.Sprintf("webhooks: %d of the outbox's %d messages never reached the receiver", w.Missing, w.Outbox))
	}
	if w.Outbox <= 0 && w.Received == 0 {
		out = append(out, "webhooks: deliveries were expected, none came")
	}
	if w.BadSignature > 0 {
		out = append(out, fmt.Sprintf("webhooks: %d deliveries with a bad signature or headers", w.BadSignature))
	}
	return out
}
