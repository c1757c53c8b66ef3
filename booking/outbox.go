// The webhooks' outbox: each order transition, and a screening's sold_out and reopened, is written here in
// the transaction that makes it, so a change and its webhook are committed together or not at all; the
// webhook package delivers from it.

package booking

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/waitroom/waitroom/queue"
)

// Event is one webhook's body, as the Standard Webhooks specification shapes it.
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// enqueue writes a webhook of type typ with data into the outbox, inside tx. Its message id is new and
// stays the webhook's id over every retry of its delivery.
func enqueue(ctx context.Context, tx *sqlx.Tx, typ string, data any) error {
	return enqueueOnce(ctx, tx, "msg_"+queue.NewToken(), typ, data)
}

// enqueueOnce writes a webhook of type typ with data into the outbox under the message id id, unless one
// with that id is there already (the same event written twice is delivered once).
func enqueueOnce(ctx context.Context, q sqlx.ExtContext, id, typ string, data any) error {
	body, err := json.Marshal(Event{Type: typ, Timestamp: time.Now().UTC(), Data: data})
	if err != nil {
		return fmt.Errorf("booking: webhook %s: %w", typ, err)
	}
	_, err = q.ExecContext(ctx, q.Rebind(`INSERT INTO webhook_outbox (msg_id, type, payload) VALUES (?, ?, ?)
		ON CONFLICT (msg_id) DO NOTHING`), id, typ, string(body))
	if err != nil {
		return fmt.Errorf("booking: webhook %s: %w", typ, err)
	}
	return nil
}
