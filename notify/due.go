// The e-mails written when a notice comes (an offer from the waitlist, an admission from the line): for
// each token that left an address, a fresh one-time link and one outbox row, in one transaction.

package notify

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
)

// nonceBytes is a link's randomness: 256 bits, 43 characters of base64url.
const nonceBytes = 32

// inChunk bounds the tokens one statement names (far below PostgreSQL's and SQLite's parameter limits).
const inChunk = 500

// Notice is what came to some tokens of a screening.
type Notice struct {
	Screening string
	Kind      Kind
	// DedupKey names this notice; with each token it is the e-mail's dedup_key (DedupKey + ":" + token), so
	// the same notice written twice, by one instance or two, is one e-mail. Make it of what the notice is
	// ("offer:<screening>:<offer number>"), not of when it was written.
	DedupKey string
	Tokens   []string
	// Deadline is when the offer (or the admission) lapses, told in the e-mail; zero: none is told. An
	// e-mail not sent by then is given up.
	Deadline time.Time
}

// Due writes an e-mail for each of n's tokens that left an address in n's screening, and returns how many
// it wrote: a token without an address, or whose e-mail for this notice is written already, gets none.
// Each e-mail's link is fresh (Settings.LinkTTL from now, and again from each attempt to send it); its
// nonce is in no table but the outbox row, until the e-mail is sent. With e-mail off it writes nothing.
func (s *Service) Due(ctx context.Context, n Notice) (int, error) {
	if n.Kind != Offer && n.Kind != Admission {
		return 0, fmt.Errorf("notify: due: kind %q: want offer or admission", n.Kind)
	}
	if n.DedupKey == "" {
		return 0, errors.New("notify: due: the notice has no dedup key")
	}
	if !s.Enabled() || len(n.Tokens) == 0 {
		return 0, nil
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("notify: due: %w", err)
	}
	defer tx.Rollback()
	type address struct {
		Token string `db:"token"`
		Email string `db:"email"`
		Lang  string `db:"lang"`
	}
	var addrs []address
	for chunk := range slices.Chunk(n.Tokens, inChunk) {
		q, args, err := sqlx.In(`SELECT token, email, lang FROM notify_addresses WHERE screening_id = ? AND token IN (?) ORDER BY token`,
			n.Screening, chunk)
		if err != nil {
			return 0, fmt.Errorf("notify: due: %w", err)
		}
		var part []address
		if err := tx.SelectContext(ctx, &part, tx.Rebind(q), args...); err != nil {
			return 0, fmt.Errorf("notify: due: %w", err)
		}
		addrs = append(addrs, part...)
	}
	now := s.now()
	var deadline *time.Time
	if !n.Deadline.IsZero() {
		d := n.Deadline.UTC()
		deadline = &d
	}
	written := 0
	for _, a := range addrs {
		nonce := newNonce()
		hash := hashNonce(nonce)
		res, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO notify_outbox (screening_id, dedup_key, email, lang, kind, link_nonce_hash,
			link_nonce, deadline, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedup_key) DO NOTHING`),
			n.Screening, n.DedupKey+":"+a.Token, a.Email, a.Lang, string(n.Kind), hash, nonce, deadline, now, now)
		if err != nil {
			return 0, fmt.Errorf("notify: due: %w", err)
		}
		if rows, err := res.RowsAffected(); err != nil {
			return 0, fmt.Errorf("notify: due: %w", err)
		} else if rows == 0 {
			continue // this notice's e-mail to this token is written already
		}
		_, err = tx.ExecContext(ctx, tx.Rebind(`INSERT INTO notify_links (nonce_hash, screening_id, token, expires_at) VALUES (?, ?, ?, ?)`),
			hash, n.Screening, a.Token, now.Add(s.s.LinkTTL))
		if err != nil {
			return 0, fmt.Errorf("notify: due: %w", err)
		}
		written++
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("notify: due: %w", err)
	}
	s.metrics.Written.Add(float64(written))
	return written, nil
}

// newNonce is a link's secret: 256 bits from crypto/rand in base64url, no padding.
func newNonce() string {
	var b [nonceBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24 panics instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashNonce is what the database finds a link by: the SHA-256 of its nonce, in hex.
func hashNonce(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return hex.EncodeToString(sum[:])
}

// link is the URL an e-mail carries: the room page of the screening, which POSTs the claim.
func (s *Service) link(screening, nonce string) string {
	return s.base + "/s/" + url.PathEscape(screening) + "?claim=" + nonce
}
