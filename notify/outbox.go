// The outbox as the deliverer reads and writes it: due e-mails claimed under a lease and the per-address
// limit, each attempt's outcome recorded, and the counts the operator sees.

package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// The states of an e-mail: not yet sent and still tried; sent (the SMTP server took it); given up.
const (
	statePending = "pending"
	stateSent    = "sent"
	stateFailed  = "failed"
)

const (
	// leaseAttempts: a claimed e-mail's lease lasts this many attempt timeouts, so one whose deliverer died
	// is tried again by another within that of its claim, and a live one records its outcome long before.
	leaseAttempts = 3
	// window is the per-address limit's rolling period.
	window = time.Hour
	// claimLock is the PostgreSQL advisory lock every claim takes for its transaction ("notify" in ASCII),
	// so that the claims of all instances read and take the per-address counts one at a time.
	claimLock int64 = 0x6e6f74696679
)

// message is a claimed e-mail: its row, the screening's name, and its link's new expiry. Attempts counts
// the attempt it was claimed for; it fences the outcome's write (an attempt whose lease ran out and whose
// row was claimed again records nothing but a success).
type message struct {
	ID        int64      `db:"id"`
	Screening string     `db:"screening_id"`
	DedupKey  string     `db:"dedup_key"`
	Email     string     `db:"email"`
	Lang      string     `db:"lang"`
	Kind      Kind       `db:"kind"`
	NonceHash string     `db:"link_nonce_hash"`
	Nonce     *string    `db:"link_nonce"`
	Deadline  *time.Time `db:"deadline"`
	Attempts  int        `db:"attempts"`

	Name        string    `db:"-"`
	LinkExpires time.Time `db:"-"`
}

// claimed is what one claim did: the e-mails to send now, and how many it moved on or gave up.
type claimed struct {
	send     []message
	deferred int
	gaveUp   int
}

// claim takes at most s.Batch e-mails due by now, the longest due first, in one short transaction: those
// whose deadline passed are given up; those whose address had Settings.PerAddress e-mails sent (or being
// sent) in the past hour are due again when the oldest of those is an hour old; the others are leased
// until now plus leaseAttempts attempts, their attempt counted and their link's expiry set to
// Settings.LinkTTL from now. On PostgreSQL the claims of every instance take one advisory lock in turn, and
// rows another transaction holds are skipped, not waited for.
func (s *Service) claim(ctx context.Context, now time.Time) (claimed, error) {
	var out claimed
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("notify: claim: %w", err)
	}
	defer tx.Rollback()
	skipLocked := ""
	if s.postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, claimLock); err != nil {
			return out, fmt.Errorf("notify: claim: %w", err)
		}
		skipLocked = " FOR UPDATE SKIP LOCKED"
	}
	var due []message
	err = tx.SelectContext(ctx, &due, tx.Rebind(`SELECT id, screening_id, dedup_key, email, lang, kind, link_nonce_hash, link_nonce,
		deadline, attempts FROM notify_outbox WHERE state = 'pending' AND next_attempt_at <= ?
		ORDER BY next_attempt_at, id LIMIT ?`+skipLocked), now, s.s.Batch)
	if err != nil || len(due) == 0 {
		return out, wrap("claim", err)
	}
	type use struct {
		n      int
		oldest time.Time // the oldest e-mail sent within the window; zero: none, only some being sent
	}
	uses := map[string]*use{}
	for _, m := range due {
		if uses[m.Email] != nil {
			continue
		}
		var recent []struct {
			SentAt *time.Time `db:"sent_at"`
		}
		err := tx.SelectContext(ctx, &recent, tx.Rebind(`SELECT sent_at FROM notify_outbox WHERE email = ?
			AND ((state = 'sent' AND sent_at > ?) OR (state = 'pending' AND leased_until > ?))`), m.Email, now.Add(-window), now)
		if err != nil {
			return out, fmt.Errorf("notify: claim: %w", err)
		}
		u := &use{n: len(recent)}
		for _, r := range recent {
			if r.SentAt != nil && (u.oldest.IsZero() || r.SentAt.Before(u.oldest)) {
				u.oldest = r.SentAt.UTC()
			}
		}
		uses[m.Email] = u
	}
	leaseUntil := now.Add(leaseAttempts * s.s.SendTimeout)
	var leased []int64
	var hashes []string
	for _, m := range due {
		u := uses[m.Email]
		switch {
		case m.Nonce == nil || (m.Deadline != nil && !m.Deadline.After(now)):
			if err := s.giveUp(ctx, tx, m.ID, "the deadline passed before it could be sent"); err != nil {
				return out, err
			}
			out.gaveUp++
		case u.n >= s.s.PerAddress:
			next := leaseUntil
			if !u.oldest.IsZero() {
				next = u.oldest.Add(window)
			}
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE notify_outbox SET next_attempt_at = ? WHERE id = ?`), next, m.ID); err != nil {
				return out, fmt.Errorf("notify: claim: %w", err)
			}
			out.deferred++
		default:
			u.n++
			m.Attempts++
			m.LinkExpires = now.Add(s.s.LinkTTL)
			leased = append(leased, m.ID)
			hashes = append(hashes, m.NonceHash)
			out.send = append(out.send, m)
		}
	}
	if len(leased) > 0 {
		if err := execIn(ctx, tx, `UPDATE notify_outbox SET attempts = attempts + 1, next_attempt_at = ?, leased_until = ? WHERE id IN (?)`,
			leaseUntil, leaseUntil, leased); err != nil {
			return out, err
		}
		if err := execIn(ctx, tx, `UPDATE notify_links SET expires_at = ? WHERE used_at IS NULL AND nonce_hash IN (?)`,
			now.Add(s.s.LinkTTL), hashes); err != nil {
			return out, err
		}
		if err := s.names(ctx, tx, out.send); err != nil {
			return out, err
		}
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("notify: claim: %w", err)
	}
	return out, nil
}

// names fills in each message's screening name (its id when the screening has none).
func (s *Service) names(ctx context.Context, tx *sqlx.Tx, ms []message) error {
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.Screening)
	}
	q, args, err := sqlx.In(`SELECT id, name FROM screenings WHERE id IN (?)`, ids)
	if err != nil {
		return fmt.Errorf("notify: claim: %w", err)
	}
	var rows []struct {
		ID   string `db:"id"`
		Name string `db:"name"`
	}
	if err := tx.SelectContext(ctx, &rows, tx.Rebind(q), args...); err != nil {
		return fmt.Errorf("notify: claim: %w", err)
	}
	name := map[string]string{}
	for _, r := range rows {
		name[r.ID] = r.Name
	}
	for i := range ms {
		if ms[i].Name = name[ms[i].Screening]; ms[i].Name == "" {
			ms[i].Name = ms[i].Screening
		}
	}
	return nil
}

// execIn runs query, whose last parameter is a list (IN (?)), in tx.
func execIn(ctx context.Context, tx *sqlx.Tx, query string, args ...any) error {
	q, in, err := sqlx.In(query, args...)
	if err != nil {
		return fmt.Errorf("notify: claim: %w", err)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(q), in...); err != nil {
		return fmt.Errorf("notify: claim: %w", err)
	}
	return nil
}

// giveUp marks an e-mail failed for reason in tx, its nonce blanked.
func (s *Service) giveUp(ctx context.Context, tx *sqlx.Tx, id int64, reason string) error {
	_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE notify_outbox SET state = 'failed', last_error = ?, link_nonce = NULL, leased_until = NULL
		WHERE id = ? AND state = 'pending'`), reason, id)
	return wrap("give up", err)
}

// sent marks m sent at now and blanks its nonce: the SMTP server took it, however late.
func (s *Service) sent(ctx context.Context, m message, now time.Time) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE notify_outbox SET state = 'sent', sent_at = ?, link_nonce = NULL, leased_until = NULL,
		last_error = NULL WHERE id = ? AND state = 'pending'`), now, m.ID)
	return wrap("sent", err)
}

// failed records m's failed attempt: due again at next, or, when giveUp, given up (its nonce blanked).
func (s *Service) failed(ctx context.Context, m message, reason string, next time.Time, giveUp bool) error {
	q := `UPDATE notify_outbox SET next_attempt_at = ?, leased_until = NULL, last_error = ? WHERE id = ? AND attempts = ? AND state = 'pending'`
	if giveUp {
		q = `UPDATE notify_outbox SET next_attempt_at = ?, leased_until = NULL, last_error = ?, state = 'failed', link_nonce = NULL
			WHERE id = ? AND attempts = ? AND state = 'pending'`
	}
	_, err := s.db.ExecContext(ctx, s.db.Rebind(q), next, reason, m.ID, m.Attempts)
	return wrap("failed", err)
}

// release gives back m's claim unsent (the deliverer stops): due at now, its attempt not counted.
func (s *Service) release(ctx context.Context, m message, now time.Time) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE notify_outbox SET next_attempt_at = ?, leased_until = NULL, attempts = attempts - 1
		WHERE id = ? AND attempts = ? AND state = 'pending'`), now, m.ID, m.Attempts)
	return wrap("release", err)
}

// pending counts the e-mails neither sent nor given up, of every screening.
func (s *Service) pending(ctx context.Context) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM notify_outbox WHERE state = 'pending'`)
	return n, wrap("count pending", err)
}

// Counts are a screening's e-mails as the operator sees them: numbers, never an address.
type Counts struct {
	// Addresses is how many tokens have an address kept.
	Addresses int `json:"addresses"`
	// Pending, Sent and Failed count the e-mails of the outbox by state.
	Pending int `json:"pending"`
	Sent    int `json:"sent"`
	Failed  int `json:"failed"`
}

// Counts reads screening's counts.
func (s *Service) Counts(ctx context.Context, screening string) (Counts, error) {
	var c Counts
	if err := s.db.GetContext(ctx, &c.Addresses, s.db.Rebind(`SELECT COUNT(*) FROM notify_addresses WHERE screening_id = ?`), screening); err != nil {
		return Counts{}, fmt.Errorf("notify: counts: %w", err)
	}
	var rows []struct {
		State string `db:"state"`
		N     int    `db:"n"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT state, COUNT(*) AS n FROM notify_outbox WHERE screening_id = ? GROUP BY state`), screening)
	if err != nil {
		return Counts{}, fmt.Errorf("notify: counts: %w", err)
	}
	for _, r := range rows {
		switch r.State {
		case statePending:
			c.Pending = r.N
		case stateSent:
			c.Sent = r.N
		case stateFailed:
			c.Failed = r.N
		}
	}
	return c, nil
}

// wrap prefixes err, if any, with the package and what was being done.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("notify: %s: %w", what, err)
}
