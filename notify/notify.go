// Package notify owns the one e-mail a buyer who left the page asked for ("tell me when it is my turn"): the
// address a token waiting in a line or on a waitlist left (Subscribe), the outbox of e-mails written when
// an offer or an admission comes to such a token (Due), their delivery over SMTP (Run), and the one-time
// link each carries, which gives the buyer's place back to whoever opens it (Claim).
//
// Guarantees:
//   - One e-mail per notice and token, however many instances write it: the outbox's dedup_key is unique.
//   - At least once: an e-mail is marked sent only after the SMTP server took it, so a deliverer that stops
//     between the two sends it again (with the same Message-ID, by which a mail client folds the two).
//   - One deliverer at a time per e-mail: each claims its rows under a lease (FOR UPDATE SKIP LOCKED on
//     PostgreSQL), so two instances never send one row at once.
//   - At most Settings.PerAddress e-mails to one address in any rolling hour: the claims of every
//     instance are serialised (an advisory lock on PostgreSQL; SQLite has one writer), so the count they
//     read is exact; an e-mail over the limit waits until the hour frees a place, it is not dropped.
//   - A link opens once, until it expires: Claim's UPDATE … WHERE used_at IS NULL. The database keeps the
//     SHA-256 of its nonce, never the nonce, except in the outbox row of the e-mail that carries it, until
//     that e-mail is sent or given up (then it is blanked). The token a link opens never leaves the server
//     but to whoever claims the link.
//
// Where things are:
//   - notify.go: the Service, its settings and their defaults, its errors.
//   - smtp.go: the SMTP URL (smtp://, smtps://, smtp+insecure://) and one e-mail sent through it (go-mail).
//   - address.go: an address checked and masked, kept for a token (Subscribe) and forgotten (Unsubscribe).
//   - due.go: the e-mails written when a notice comes (Due): a link and an outbox row per token.
//   - link.go: a link claimed, once (Claim).
//   - outbox.go: the outbox as the deliverer reads and writes it: due rows claimed under a lease and the
//     per-address limit, each attempt's outcome, the counts.
//   - deliver.go: the loop (Run), one poll (Poll), one attempt.
//   - backoff.go: when a failed e-mail is tried again, and when it is given up.
//   - message.go: what the e-mail says, in English and in Korean.
//   - sweep.go: what is deleted once a sale has ended (Forget, Sweep).
//   - metrics.go: the Prometheus metrics.
//
// The tables (notify_addresses, notify_links, notify_outbox) are created by booking's migrations, the one
// goose sequence of the database.
package notify

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Errors a caller maps to its answer.
var (
	// ErrOff: mail is not configured (notify.smtp_url is empty); no address is kept.
	ErrOff = errors.New("notify: e-mail is off on this server")
	// ErrInvalidEmail: not one plain address (no display name, at most 254 bytes, a dot in its domain).
	ErrInvalidEmail = errors.New("notify: not an e-mail address")
	// ErrInvalidLang: a language the e-mails are not written in.
	ErrInvalidLang = errors.New("notify: lang is one of en, ko")
	// ErrLinkUsed, ErrLinkExpired, ErrLinkUnknown: why Claim refused a link.
	ErrLinkUsed    = errors.New("notify: the link was used already")
	ErrLinkExpired = errors.New("notify: the link has expired")
	ErrLinkUnknown = errors.New("notify: no such link")
)

// Kind is what an e-mail tells.
type Kind string

// The kinds: a waitlist's offer of seats, with a deadline; the line's admission.
const (
	Offer     Kind = "offer"
	Admission Kind = "admission"
)

// Defaults of the settings a Settings leaves zero.
const (
	DefaultPerAddress = 5
	DefaultLinkTTL    = 30 * time.Minute
	// defaultEvery is how often the deliverer looks for due e-mails; defaultSweepEvery how often it deletes
	// what ended sales leave.
	defaultEvery      = 250 * time.Millisecond
	defaultSweepEvery = time.Minute
	// defaultBatch bounds the e-mails one poll claims; defaultParallel how many of them are sent at once,
	// each on a connection of its own.
	defaultBatch    = 16
	defaultParallel = 4
	// defaultSendTimeout bounds one attempt, the connection to the server's answer to the message.
	defaultSendTimeout = 10 * time.Second
	// The back-off: 1 s after the first failure, doubled after each next one up to 5 min; given up after
	// the 10th attempt.
	defaultFirstRetry  = time.Second
	defaultMaxRetry    = 5 * time.Minute
	defaultMaxAttempts = 10
)

// Settings say where the e-mails go and how. Zero fields take the defaults above.
type Settings struct {
	// SMTPURL is the server the e-mails are sent through (notify.smtp_url; ParseSMTPURL); empty: e-mail is
	// off, no address is kept and Due writes nothing.
	SMTPURL string
	// From is the sender, an address with or without a display name (notify.from).
	From string
	// PublicURL is the room's public base URL, http(s) with no path: the links are PublicURL/s/{screening}?claim=….
	PublicURL string
	// PerAddress is how many e-mails one address is sent in any rolling hour; the rest wait.
	PerAddress int
	// LinkTTL is how long a link opens once its e-mail was sent.
	LinkTTL time.Duration
	// Every is how often the outbox is polled; SweepEvery how often ended sales are swept.
	Every, SweepEvery time.Duration
	// Batch bounds the e-mails one poll claims; Parallel how many of them are sent at once.
	Batch, Parallel int
	// SendTimeout bounds one attempt; an e-mail's lease lasts three of them.
	SendTimeout time.Duration
	// FirstRetry is the wait after a first failed attempt, doubled after each next one up to MaxRetry; an
	// e-mail is given up after MaxAttempts.
	FirstRetry, MaxRetry time.Duration
	MaxAttempts          int
	// TLSConfig checks the server's certificate (nil: the system's roots, for the URL's host); a test
	// gives its own roots.
	TLSConfig *tls.Config
	// Now is the clock of every time the package writes or compares (nil: time.Now).
	Now func() time.Time
}

// withDefaults is s with every zero field set to its default.
func (s Settings) withDefaults() Settings {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	set(&s.LinkTTL, DefaultLinkTTL)
	set(&s.Every, defaultEvery)
	set(&s.SweepEvery, defaultSweepEvery)
	set(&s.SendTimeout, defaultSendTimeout)
	set(&s.FirstRetry, defaultFirstRetry)
	set(&s.MaxRetry, defaultMaxRetry)
	setInt(&s.PerAddress, DefaultPerAddress)
	setInt(&s.Batch, defaultBatch)
	setInt(&s.Parallel, defaultParallel)
	setInt(&s.MaxAttempts, defaultMaxAttempts)
	if s.Now == nil {
		s.Now = time.Now
	}
	return s
}

// Service keeps the addresses, writes the outbox and delivers it. Run it on every instance: they share the
// work.
type Service struct {
	db      *sqlx.DB
	s       Settings
	server  SMTP   // zero when e-mail is off
	from    string // the From header, as parsed
	domain  string // the From address's domain: the right side of each Message-ID
	base    string // PublicURL without a trailing slash
	metrics *Metrics
	log     *slog.Logger
	// postgres: the claim locks (an advisory lock, then FOR UPDATE SKIP LOCKED); SQLite has one writer.
	postgres bool
}

// New is the service over db (PostgreSQL or SQLite, migrated by booking.Migrate) with s (zero fields: the
// defaults), counting into m (nil: counted nowhere) and logging to log. With an SMTP URL it refuses
// settings that cannot send: a URL ParseSMTPURL refuses, a From that is not an address, a PublicURL that
// is not an http(s) URL without a path.
func New(db *sqlx.DB, s Settings, m *Metrics, log *slog.Logger) (*Service, error) {
	if m == nil {
		m = NewMetrics(nil)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	svc := &Service{db: db, s: s.withDefaults(), metrics: m, log: log, postgres: db.DriverName() == "postgres"}
	if s.SMTPURL == "" {
		return svc, nil
	}
	var err error
	if svc.server, err = ParseSMTPURL(s.SMTPURL); err != nil {
		return nil, err
	}
	from, err := mail.ParseAddress(s.From)
	if err != nil {
		return nil, fmt.Errorf("notify.from %q: not an address: %w", s.From, err)
	}
	svc.from = from.String()
	svc.domain = from.Address[strings.LastIndexByte(from.Address, '@')+1:]
	if err := CheckPublicURL(s.PublicURL); err != nil {
		return nil, err
	}
	svc.base = strings.TrimSuffix(s.PublicURL, "/")
	return svc, nil
}

// CheckPublicURL refuses a links' base that is not an http(s) URL with a host and no path, query or
// fragment.
func CheckPublicURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("notify.public_url %q: want an http(s) URL with no path (https://tickets.example)", raw)
	}
	return nil
}

// Enabled reports whether e-mail is configured: the room page offers the field only then. A nil Service is
// off.
func (s *Service) Enabled() bool { return s != nil && s.s.SMTPURL != "" }

// now is the service's clock, in UTC (what the database is given).
func (s *Service) now() time.Time { return s.s.Now().UTC() }
