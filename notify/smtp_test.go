// The SMTP URL: each scheme's protection and default port, the credentials, and refusals that never
// repeat a password.

package notify_test

import (
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/waitroom/waitroom/notify"
)

func TestParseSMTPURL(t *testing.T) {
	good := map[string]notify.SMTP{
		"smtp://mail.example":                   {Security: notify.StartTLS, Host: "mail.example", Port: 587},
		"smtp://u%40x:p%3Ass@mail.example:2525": {Security: notify.StartTLS, Host: "mail.example", Port: 2525, Username: "u@x", Password: "p:ss"},
		"smtps://apikey:secret@mail.example":    {Security: notify.ImplicitTLS, Host: "mail.example", Port: 465, Username: "apikey", Password: "secret"},
		"smtp+insecure://127.0.0.1:1025":        {Security: notify.Plain, Host: "127.0.0.1", Port: 1025},
		"smtp+insecure://mailpit":               {Security: notify.Plain, Host: "mailpit", Port: 25},
		"smtp://[::1]:587/":                     {Security: notify.StartTLS, Host: "::1", Port: 587},
	}
	for in, want := range good {
		if got, err := notify.ParseSMTPURL(in); err != nil || got != want {
			t.Errorf("ParseSMTPURL(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"", "mail.example:587", "http://mail.example", "smtp://", "smtp://:587", "smtp://mail.example:0", "smtp://mail.example:99999",
		"smtp://mail.example/path", "smtp://mail.example?tls=no", "smtp+insecure://user:hunter2@127.0.0.1:1025",
		"smtp://:hunter2@mail.example", "smtp://user:hunter2@mail.example:x", "smtp://user:hunter2@mail.example\x7f",
	} {
		_, err := notify.ParseSMTPURL(bad)
		if err == nil {
			t.Errorf("ParseSMTPURL(%q) = nil error, want a refusal", bad)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseSMTPURL(%q)'s refusal repeats the password: %v", bad, err)
		}
	}
}

func TestNewRefusesSettingsThatCannotSend(t *testing.T) {
	ok := notify.Settings{SMTPURL: "smtp://mail.example", From: "tickets@tickets.example", PublicURL: "https://tickets.example"}
	for _, bad := range []func(*notify.Settings){
		func(s *notify.Settings) { s.SMTPURL = "ftp://mail.example" },
		func(s *notify.Settings) { s.From = "" },
		func(s *notify.Settings) { s.From = "not an address" },
		func(s *notify.Settings) { s.PublicURL = "" },
		func(s *notify.Settings) { s.PublicURL = "https://tickets.example/room" },
		func(s *notify.Settings) { s.PublicURL = "ftp://tickets.example" },
	} {
		s := ok
		bad(&s)
		if _, err := notify.New(sqlx.NewDb(nil, "sqlite"), s, nil, nil); err == nil {
			t.Errorf("New(%+v) = nil error, want a refusal", s)
		}
	}
}
