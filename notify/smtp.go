// The SMTP server the e-mails go through: its URL read (the scheme says how the connection is protected),
// and one message sent over a connection of its own with go-mail.

package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Security is how the connection to the SMTP server is protected.
type Security string

// The schemes of notify.smtp_url and what they mean.
const (
	// StartTLS (smtp://, port 587 by default): the connection must be upgraded with STARTTLS and the
	// server's certificate must be valid for its host; a server that offers no STARTTLS is refused, nothing
	// is sent in clear.
	StartTLS Security = "smtp"
	// ImplicitTLS (smtps://, port 465 by default): TLS from the first byte (RFC 8314).
	ImplicitTLS Security = "smtps"
	// Plain (smtp+insecure://, port 25 by default): no TLS at all, for a local test server (Mailpit) or a
	// relay on the same host; it takes no user or password, which would cross the wire in clear.
	Plain Security = "smtp+insecure"
)

// SMTP is a parsed notify.smtp_url.
type SMTP struct {
	Security           Security
	Host               string
	Port               int
	Username, Password string
}

// defaultPorts are each scheme's port when the URL names none.
var defaultPorts = map[Security]int{StartTLS: 587, ImplicitTLS: 465, Plain: 25}

// errSMTPURL starts every refusal of ParseSMTPURL, naming the setting. A refusal never repeats the URL,
// which may hold a password.
var errSMTPURL = errors.New("notify.smtp_url")

// ParseSMTPURL reads smtp://[user[:password]@]host[:port] (STARTTLS required), smtps://… (implicit TLS) or
// smtp+insecure://host[:port] (no TLS, no credentials). The user and password are URL-escaped; nothing
// follows the host and port.
func ParseSMTPURL(raw string) (SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return SMTP{}, fmt.Errorf("%w: not a URL (want smtp://user:password@host:587, smtps://host:465 or smtp+insecure://host:1025)", errSMTPURL)
	}
	sec := Security(u.Scheme)
	port, known := defaultPorts[sec]
	switch {
	case !known:
		return SMTP{}, fmt.Errorf("%w: scheme %q: want smtp (STARTTLS), smtps (TLS) or smtp+insecure (no TLS)", errSMTPURL, u.Scheme)
	case u.Hostname() == "":
		return SMTP{}, fmt.Errorf("%w: no host", errSMTPURL)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return SMTP{}, fmt.Errorf("%w: want nothing after the host and port", errSMTPURL)
	case sec == Plain && u.User != nil:
		return SMTP{}, fmt.Errorf("%w: smtp+insecure:// takes no user or password (they would cross the wire in clear): use smtp:// or smtps://", errSMTPURL)
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return SMTP{}, fmt.Errorf("%w: port %q: want 1 to 65535", errSMTPURL, p)
		}
	}
	out := SMTP{Security: sec, Host: u.Hostname(), Port: port}
	if u.User != nil {
		out.Username = u.User.Username()
		out.Password, _ = u.User.Password()
		if out.Username == "" {
			return SMTP{}, fmt.Errorf("%w: a password without a user", errSMTPURL)
		}
	}
	return out, nil
}

// Addr is host:port.
func (c SMTP) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// client is a go-mail client for one attempt: TLS as the scheme says, checked against roots (nil: the
// system's) for the URL's host; the credentials, if any, by the strongest mechanism both sides know.
func (c SMTP) client(roots *tls.Config, timeout time.Duration) (*gomail.Client, error) {
	tc := &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12}
	if roots != nil {
		tc = roots.Clone()
		if tc.ServerName == "" {
			tc.ServerName = c.Host
		}
	}
	opts := []gomail.Option{gomail.WithPort(c.Port), gomail.WithTimeout(timeout)}
	switch c.Security {
	case StartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory), gomail.WithTLSConfig(tc))
	case ImplicitTLS:
		opts = append(opts, gomail.WithSSL(), gomail.WithTLSConfig(tc))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if c.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(c.Username), gomail.WithPassword(c.Password))
	}
	return gomail.NewClient(c.Host, opts...)
}

// send delivers m over a connection of its own, within timeout.
func (c SMTP) send(ctx context.Context, roots *tls.Config, timeout time.Duration, m *gomail.Msg) error {
	cl, err := c.client(roots, timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cl.DialAndSendWithContext(ctx, m)
}
