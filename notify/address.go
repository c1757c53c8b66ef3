// A buyer's address: checked (one plain address, nothing else), masked for the answer that confirms it,
// kept for a token of a screening (Subscribe), and forgotten (Unsubscribe).

package notify

import (
	"context"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxEmailBytes bounds an address (RFC 5321's path limit less its angle brackets).
const MaxEmailBytes = 254

// Langs are the languages the e-mails are written in.
var Langs = []string{"en", "ko"}

// ParseEmail returns s as the address kept, in lower case, when s is exactly one plain address: what
// net/mail reads from it is s itself (no display name, no comment, no quoting, no space around it), at most
// MaxEmailBytes, and its domain a name with a dot in it (no domain literal). Anything else is
// ErrInvalidEmail.
func ParseEmail(s string) (string, error) {
	if s == "" || len(s) > MaxEmailBytes || !utf8.ValidString(s) {
		return "", ErrInvalidEmail
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", ErrInvalidEmail
	}
	at := strings.LastIndexByte(s, '@')
	domain := s[at+1:]
	if at < 1 || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.Contains(domain, "..") || strings.ContainsAny(domain, "[]") {
		return "", ErrInvalidEmail
	}
	return strings.ToLower(s), nil
}

// MaskEmail shows an address without giving it away: its first character, three stars, and its domain
// ("a***@b.example").
func MaskEmail(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 1 {
		return "***"
	}
	first, _ := utf8.DecodeRuneInString(email)
	return string(first) + "***" + email[at:]
}

// ParseLang checks a language the e-mails are written in.
func ParseLang(lang string) (string, error) {
	if !slices.Contains(Langs, lang) {
		return "", ErrInvalidLang
	}
	return lang, nil
}

// Subscribe keeps email (ParseEmail) and lang for token in screening, in place of any address the token
// left before. The caller checks that the token holds a place. Bad input keeps nothing (ErrInvalidEmail,
// ErrInvalidLang); with e-mail off nothing is kept (ErrOff).
func (s *Service) Subscribe(ctx context.Context, screening, token, email, lang string) error {
	if !s.Enabled() {
		return ErrOff
	}
	email, err := ParseEmail(email)
	if err != nil {
		return err
	}
	if lang, err = ParseLang(lang); err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO notify_addresses (screening_id, token, email, lang, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (screening_id, token) DO UPDATE SET email = excluded.email, lang = excluded.lang,
		created_at = excluded.created_at`), screening, token, email, lang, s.now())
	if err != nil {
		return fmt.Errorf("notify: subscribe: %w", err)
	}
	return nil
}

// Unsubscribe forgets token's address in screening, and gives up its e-mails not yet sent: in one
// transaction, so no e-mail is written for it afterwards. An e-mail already being sent may still go. It is
// not an error when there was none.
func (s *Service) Unsubscribe(ctx context.Context, screening, token string) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("notify: unsubscribe: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM notify_addresses WHERE screening_id = ? AND token = ?`), screening, token); err != nil {
		return fmt.Errorf("notify: unsubscribe: %w", err)
	}
	_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE notify_outbox SET state = 'failed', last_error = 'unsubscribed', link_nonce = NULL,
		leased_until = NULL WHERE state = 'pending' AND screening_id = ? AND link_nonce_hash IN
		(SELECT nonce_hash FROM notify_links WHERE screening_id = ? AND token = ?)`), screening, screening, token)
	if err != nil {
		return fmt.Errorf("notify: unsubscribe: %w", err)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM notify_links WHERE screening_id = ? AND token = ? AND used_at IS NULL`), screening, token); err != nil {
		return fmt.Errorf("notify: unsubscribe: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("notify: unsubscribe: %w", err)
	}
	return nil
}

// Subscribed reports whether token left an address in screening.
func (s *Service) Subscribed(ctx context.Context, screening, token string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.db.Rebind(`SELECT COUNT(*) FROM notify_addresses WHERE screening_id = ? AND token = ?`), screening, token)
	if err != nil {
		return false, fmt.Errorf("notify: subscribed: %w", err)
	}
	return n > 0, nil
}
