// What is deleted once a sale has ended: a screening's addresses and unused links at once (Forget, when
// the caller knows), and, from Run, those of every sale that ended, the links long expired, and the
// outbox's finished rows once they are no longer counted.

package notify

import (
	"context"
	"fmt"
	"time"
)

const (
	// linkKeep is how long a link is kept after it expired, so a late click is told LINK_EXPIRED (or
	// LINK_USED) rather than LINK_UNKNOWN.
	linkKeep = 24 * time.Hour
	// endedKeep is how long a sent or given-up e-mail of an ended sale is kept (for the operator's counts
	// and the per-address limit); openKeep, of a sale still open.
	endedKeep = 24 * time.Hour
	openKeep  = 7 * 24 * time.Hour
)

// endedSQL selects the screenings whose sale has ended: closed by the operator, archived, or whose show
// has started (? is now).
const endedSQL = `SELECT id FROM screenings WHERE closed_at IS NOT NULL OR archived_at IS NOT NULL OR starts_at <= ?`

// Forget deletes screening's addresses and unused links, and gives up its e-mails not yet sent (an e-mail
// already being sent may still go, its link dead): the sale ended, or was reset. Links used before are
// kept until they are swept, to tell a second click LINK_USED.
func (s *Service) Forget(ctx context.Context, screening string) error {
	return s.forget(ctx, `= ?`, screening)
}

// Sweep does what Forget does for every screening whose sale ended (see endedSQL), and for the
// screenings deleted since; and deletes, everywhere, the links expired more than linkKeep ago and the
// finished e-mails of a sale ended more than endedKeep after they were written (openKeep for a sale
// still open). Run calls it every Settings.SweepEvery.
func (s *Service) Sweep(ctx context.Context) error {
	now := s.now()
	if err := s.forget(ctx, `IN (`+endedSQL+`)`, now); err != nil {
		return err
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM notify_addresses WHERE screening_id NOT IN (SELECT id FROM screenings)`, nil},
		{`DELETE FROM notify_links WHERE expires_at < ?`, []any{now.Add(-linkKeep)}},
		{`DELETE FROM notify_outbox WHERE state <> 'pending' AND ((created_at < ? AND screening_id IN (` + endedSQL + `)) OR created_at < ?)`,
			[]any{now.Add(-endedKeep), now, now.Add(-openKeep)}},
	} {
		if _, err := s.db.ExecContext(ctx, s.db.Rebind(q.sql), q.args...); err != nil {
			return fmt.Errorf("notify: sweep: %w", err)
		}
	}
	return nil
}

// forget deletes the addresses and unused links, and gives up the pending e-mails, of the screenings whose
// id matches cond (with its arguments), in one transaction.
func (s *Service) forget(ctx context.Context, cond string, args ...any) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("notify: forget: %w", err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DELETE FROM notify_addresses WHERE screening_id ` + cond,
		`DELETE FROM notify_links WHERE used_at IS NULL AND screening_id ` + cond,
		`UPDATE notify_outbox SET state = 'failed', last_error = 'the sale ended', link_nonce = NULL, leased_until = NULL
			WHERE state = 'pending' AND screening_id ` + cond,
	} {
		if _, err := tx.ExecContext(ctx, tx.Rebind(q), args...); err != nil {
			return fmt.Errorf("notify: forget: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("notify: forget: %w", err)
	}
	return nil
}
