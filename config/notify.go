// The e-mail to a buyer who left the page (notify.*): the settings, their defaults and their checks. The
// SMTP URL and the links' base are read by package notify's own parsers, the one reader of each.

package config

import (
	"fmt"
	"net/mail"
	"time"

	"github.com/waitroom/waitroom/notify"
)

// Notify is where the e-mails to buyers who left the page go ("tell me when it is my turn"): one e-mail
// when an offer or an admission comes to a token that left an address and has no open socket, with a
// one-time link back to its place (docs/operations.md, "Notifications by e-mail").
type Notify struct {
	// SMTPURL is the server the e-mails are sent through: smtp://user:password@host:587 (STARTTLS
	// required, the certificate checked), smtps://user:password@host:465 (TLS from the first byte), or
	// smtp+insecure://host:1025 (no TLS and no credentials: Mailpit, a relay on the same host). The user and
	// password are URL-escaped. Empty: e-mail is off, the page offers no field, nothing else is required.
	SMTPURL string `koanf:"smtp_url"`
	// From is the sender: an address, with or without a display name ("Box office <tickets@example.com>").
	From string `koanf:"from"`
	// PublicURL is the room's public base URL, http(s) with no path: the links are
	// {public_url}/s/{screening}?claim=….
	PublicURL string `koanf:"public_url"`
	// PerAddress is how many e-mails one address is sent in any rolling hour; the rest wait for the hour.
	PerAddress int `koanf:"per_address"`
	// LinkTTL is how long a link opens once its e-mail was sent.
	LinkTTL time.Duration `koanf:"link_ttl"`
}

// Bounds of notify.per_address and notify.link_ttl.
const (
	maxNotifyPerAddress = 1000
	minLinkTTL          = time.Minute
	maxLinkTTL          = 24 * time.Hour
)

// DefaultNotify is e-mail off, and the limits it runs with once notify.smtp_url is set.
func DefaultNotify() Notify {
	return Notify{PerAddress: notify.DefaultPerAddress, LinkTTL: notify.DefaultLinkTTL}
}

// Validate names what cannot work in the e-mails' settings; with notify.smtp_url empty (e-mail off)
// nothing is checked. An error never repeats the SMTP URL, which may hold a password.
func (n Notify) Validate() []error {
	if n.SMTPURL == "" {
		return nil
	}
	var errs []error
	if _, err := notify.ParseSMTPURL(n.SMTPURL); err != nil {
		errs = append(errs, err)
	}
	if n.From == "" {
		errs = append(errs, fmt.Errorf("notify.from must be set with notify.smtp_url: the sender's address"))
	} else if _, err := mail.ParseAddress(n.From); err != nil {
		errs = append(errs, fmt.Errorf("notify.from %q: want an address, with or without a display name: %v", n.From, err))
	}
	if n.PublicURL == "" {
		errs = append(errs, fmt.Errorf("notify.public_url must be set with notify.smtp_url: the room's public base URL, which the links open"))
	} else if err := notify.CheckPublicURL(n.PublicURL); err != nil {
		errs = append(errs, err)
	}
	if n.PerAddress < 1 || n.PerAddress > maxNotifyPerAddress {
		errs = append(errs, fmt.Errorf("notify.per_address must be 1 to %d, got %d", maxNotifyPerAddress, n.PerAddress))
	}
	if n.LinkTTL < minLinkTTL || n.LinkTTL > maxLinkTTL {
		errs = append(errs, fmt.Errorf("notify.link_ttl must be %v to %v, got %v", minLinkTTL, maxLinkTTL, n.LinkTTL))
	}
	return errs
}

// Settings are the notify package's settings from these (its other settings keep their defaults).
func (n Notify) Settings() notify.Settings {
	return notify.Settings{SMTPURL: n.SMTPURL, From: n.From, PublicURL: n.PublicURL, PerAddress: n.PerAddress, LinkTTL: n.LinkTTL}
}
