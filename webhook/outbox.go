// The outbox as the deliverer sees it: due rows claimed under a lease, each attempt's outcome recorded, and
// the deliveries listed by state for the operator.

package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// ErrBadState: a state to list that is none of pending, delivered, failed.
var ErrBadState = errors.New("webhook: state is one of pending, delivered, failed")

// State is where a webhook is in its delivery.
type State string

// The states: not yet delivered and still tried; delivered (a 2xx); given up after its last attempt.
const (
	Pending   State = "pending"
	Delivered State = "delivered"
	Failed    State = "failed"
)

// ParseState reads a state to list; "" lists every state.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case "", Pending, Delivered, Failed:
		return st, nil
	}
	return "", fmt.Errorf("%w (got %q)", ErrBadState, s)
}

// stateSQL is the condition of each state's rows.
var stateSQL = map[State]string{
	"":        "1 = 1",
	Pending:   "delivered_at IS NULL AND failed_at IS NULL",
	Delivered: "delivered_at IS NOT NULL",
	Failed:    "failed_at IS NOT NULL",
}

// Delivery is one webhook of the outbox as the operator reads it. The times are UTC.
type Delivery struct {
	ID            int64      `db:"id" json:"id"`
	MsgID         string     `db:"msg_id" json:"msg_id"`
	Type          string     `db:"type" json:"type"`
	CreatedAt     time.Time  `db:"created_at" json:"created_at"`
	Attempts      int        `db:"attempts" json:"attempts"`
	NextAttemptAt time.Time  `db:"next_attempt_at" json:"next_attempt_at"`
	DeliveredAt   *time.Time `db:"delivered_at" json:"delivered_at"`
	// FailedAt is when it was given up (failed only).
	FailedAt   *time.Time `db:"failed_at" json:"failed_at,omitempty"`
	LastStatus *int       `db:"last_status" json:"last_status"`
	LastError  *string    `db:"last_error" json:"last_error"`
}

// Outbox reads and writes the webhook_outbox table that Enqueue fills.
type Outbox struct {
	db *sqlx.DB
	// skipLocked ends the claim's SELECT on PostgreSQL; SQLite has one writer and no row locks.
	skipLocked string
}

// NewOutbox is the outbox in db (PostgreSQL or SQLite, migrated by booking.Migrate).
func NewOutbox(db *sqlx.DB) *Outbox {
	o := &Outbox{db: db}
	if db.DriverName() == "postgres" {
		o.skipLocked = " FOR UPDATE SKIP LOCKED"
	}
	return o
}

// List returns at most limit deliveries in state (""; every state), the newest first.
func (o *Outbox) List(ctx context.Context, state State, limit int) ([]Delivery, error) {
	cond, ok := stateSQL[state]
	if !ok {
		return nil, fmt.Errorf("%w (got %q)", ErrBadState, state)
	}
	out := []Delivery{}
	err := o.db.SelectContext(ctx, &out, o.db.Rebind(`SELECT id, msg_id, type, created_at, attempts, next_attempt_at,
		delivered_at, failed_at, last_status, last_error FROM webhook_outbox WHERE `+cond+` ORDER BY id DESC LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("webhook: list %s: %w", state, err)
	}
	for i := range out {
		d := &out[i]
		d.CreatedAt, d.NextAttemptAt = d.CreatedAt.UTC(), d.NextAttemptAt.UTC()
		d.DeliveredAt, d.FailedAt = utc(d.DeliveredAt), utc(d.FailedAt)
	}
	return out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Pending counts the webhooks not delivered and not given up.
func (o *Outbox) Pending(ctx context.Context) (int, error) {
	var n int
	if err := o.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM webhook_outbox WHERE `+stateSQL[Pending]); err != nil {
		return 0, fmt.Errorf("webhook: count pending: %w", err)
	}
	return n, nil
}

// message is a claimed webhook: what is sent, and Attempts, the number of its attempts counting the one
// it was claimed for, which fences the outcome's write (an attempt whose lease ran out and whose row was
// claimed again records nothing but a delivery).
type message struct {
	ID        int64     `db:"id"`
	MsgID     string    `db:"msg_id"`
	Type      string    `db:"type"`
	Payload   string    `db:"payload"`
	Attempts  int       `db:"attempts"`
	CreatedAt time.Time `db:"created_at"`
}

// claim takes at most n webhooks due by now, the longest due first, and leases them until leaseUntil: in
// one short transaction their attempt is counted and their next attempt moved to leaseUntil, so no other
// deliverer claims them while this one sends. On PostgreSQL rows another deliverer is claiming are skipped,
// not waited for.
func (o *Outbox) claim(ctx context.Context, now, leaseUntil time.Time, n int) ([]message, error) {
	tx, err := o.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	defer tx.Rollback()
	var due []message
	err = tx.SelectContext(ctx, &due, tx.Rebind(`SELECT id, msg_id, type, payload, attempts, created_at FROM webhook_outbox
		WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?
		ORDER BY next_attempt_at, id LIMIT ?`+o.skipLocked), now.UTC(), n)
	if err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	if len(due) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(due))
	for i := range due {
		ids[i] = due[i].ID
		due[i].Attempts++
	}
	query, args, err := sqlx.In(`UPDATE webhook_outbox SET attempts = attempts + 1, next_attempt_at = ? WHERE id IN (?)`, leaseUntil.UTC(), ids)
	if err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(query), args...); err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	return due, nil
}

// delivered marks m delivered at now with the receiver's status: a 2xx is a delivery however late it came.
func (o *Outbox) delivered(ctx context.Context, m message, status int, now time.Time) error {
	_, err := o.db.ExecContext(ctx, o.db.Rebind(`UPDATE webhook_outbox SET delivered_at = ?, last_status = ?, last_error = NULL
		WHERE id = ? AND delivered_at IS NULL`), now.UTC(), status, m.ID)
	if err != nil {
		return fmt.Errorf("webhook: %s delivered: %w", m.MsgID, err)
	}
	return nil
}

// failed records m's failed attempt (status 0: no answer): it is due again at next, or, when giveUp, given up
// at now.
func (o *Outbox) failed(ctx context.Context, m message, status int, reason string, next time.Time, giveUp bool, now time.Time) error {
	var failedAt *time.Time
	if giveUp {
		u := now.UTC()
		failedAt = &u
	}
	_, err := o.db.ExecContext(ctx, o.db.Rebind(`UPDATE webhook_outbox SET next_attempt_at = ?, last_status = ?, last_error = ?, failed_at = ?
		WHERE id = ? AND attempts = ? AND delivered_at IS NULL`), next.UTC(), nullStatus(status), reason, failedAt, m.ID, m.Attempts)
	if err != nil {
		return fmt.Errorf("webhook: %s failed: %w", m.MsgID, err)
	}
	return nil
}

// release gives back m's claim unsent (the deliverer stops): due at now, its attempt not counted.
func (o *Outbox) release(ctx context.Context, m message, now time.Time) error {
	_, err := o.db.ExecContext(ctx, o.db.Rebind(`UPDATE webhook_outbox SET next_attempt_at = ?, attempts = attempts - 1
		WHERE id = ? AND attempts = ? AND delivered_at IS NULL`), now.UTC(), m.ID, m.Attempts)
	if err != nil {
		return fmt.Errorf("webhook: %s release: %w", m.MsgID, err)
	}
	return nil
}

func nullStatus(status int) *int {
	if status == 0 {
		return nil
	}
	return &status
}
