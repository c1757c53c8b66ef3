// A webhook written into the outbox: its body's shape, its message id, and the row, inside the transaction
// of the change it tells, so a change and its webhook are committed together or not at all. Whoever writes
// a webhook (booking) calls Enqueue; this package alone knows the table's columns.

package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/ids"
)

// Event is one webhook's body, as the Standard Webhooks specification shapes it.
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// Execer is what Enqueue writes through: a transaction (*sqlx.Tx), or a database.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	Rebind(query string) string
}

// NewMsgID returns a fresh message id, "msg_" and 128 random bits in hex: the webhook's id (webhook-id)
// over every retry of its delivery.
func NewMsgID() string { return "msg_" + ids.New() }

// Enqueue writes the webhook typ with data into the outbox through q (the transaction of the change it
// tells) under the message id id, unless one with that id is there already: the same event written twice,
// under an id made of what it tells, is delivered once.
func Enqueue(ctx context.Context, q Execer, id, typ string, data any) error {
	body, err := json.Marshal(Event{Type: typ, Timestamp: time.Now().UTC(), Data: data})
	if err != nil {
		return fmt.Errorf("webhook: enqueue %s: %w", typ, err)
	}
	_, err = q.ExecContext(ctx, q.Rebind(`INSERT INTO webhook_outbox (msg_id, type, payload) VALUES (?, ?, ?)
		ON CONFLICT (msg_id) DO NOTHING`), id, typ, string(body))
	if err != nil {
		return fmt.Errorf("webhook: enqueue %s: %w", typ, err)
	}
	return nil
}
