// A link claimed: the nonce an e-mail carried, exchanged once for the place it stands for.

package notify

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
)

// Claim exchanges a link's nonce for the screening and token it stands for, once: the link is marked used
// in the same UPDATE that finds it unused and unexpired, so of two clicks one wins. A refusal changes
// nothing and says why: ErrLinkUsed (claimed before), ErrLinkExpired, ErrLinkUnknown (forged, mistyped, or
// forgotten with its sale). The link is looked up by its nonce's SHA-256, so the lookup's time does not
// depend on how much of a guess matches a real nonce.
func (s *Service) Claim(ctx context.Context, nonce string) (screening, token string, err error) {
	defer func() { s.metrics.claim(err) }()
	if b, err := base64.RawURLEncoding.DecodeString(nonce); err != nil || len(b) != nonceBytes {
		return "", "", ErrLinkUnknown
	}
	hash := hashNonce(nonce)
	now := s.now()
	err = s.db.QueryRowxContext(ctx, s.db.Rebind(`UPDATE notify_links SET used_at = ?
		WHERE nonce_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING screening_id, token`), now, hash, now).Scan(&screening, &token)
	if err == nil {
		return screening, token, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("notify: claim: %w", err)
	}
	var link struct {
		UsedAt    *time.Time `db:"used_at"`
		ExpiresAt time.Time  `db:"expires_at"`
	}
	err = s.db.GetContext(ctx, &link, s.db.Rebind(`SELECT used_at, expires_at FROM notify_links WHERE nonce_hash = ?`), hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", "", ErrLinkUnknown
	case err != nil:
		return "", "", fmt.Errorf("notify: claim: %w", err)
	case link.UsedAt != nil:
		return "", "", ErrLinkUsed
	}
	return "", "", ErrLinkExpired
}
