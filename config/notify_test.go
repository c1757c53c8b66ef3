package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// With notify.smtp_url empty, e-mail is off and nothing else is asked for; set, it needs a sender and the
// links' base, and each refusal names its key without repeating the SMTP URL's password.
func TestNotifyNeedsASenderAndALinkBaseOnlyWhenMailIsOn(t *testing.T) {
	on := Notify{SMTPURL: "smtp://user:hunter2@mail.example:587", From: "Box office <tickets@example.com>",
		PublicURL: "https://tickets.example.com", PerAddress: 5, LinkTTL: 30 * time.Minute}
	cases := []struct {
		name   string
		change func(*Notify)
		want   []string // what the errors name; none: no error
	}{
		{"off", func(n *Notify) { *n = Notify{} }, nil},
		{"off, the rest left as it is", func(n *Notify) { n.SMTPURL = ""; n.From = "nonsense" }, nil},
		{"on", func(*Notify) {}, nil},
		{"STARTTLS on a port of its own", func(n *Notify) { n.SMTPURL = "smtp://mail.example:2525" }, nil},
		{"implicit TLS", func(n *Notify) { n.SMTPURL = "smtps://apikey:hunter2@mail.example" }, nil},
		{"Mailpit", func(n *Notify) { n.SMTPURL = "smtp+insecure://mailpit:1025" }, nil},
		{"a plain From", func(n *Notify) { n.From = "tickets@example.com" }, nil},
		{"no From", func(n *Notify) { n.From = "" }, []string{"notify.from"}},
		{"a From that is no address", func(n *Notify) { n.From = "tickets" }, []string{"notify.from"}},
		{"no public URL", func(n *Notify) { n.PublicURL = "" }, []string{"notify.public_url"}},
		{"a public URL with a path", func(n *Notify) { n.PublicURL = "https://tickets.example.com/room" }, []string{"notify.public_url"}},
		{"a public URL that is not http", func(n *Notify) { n.PublicURL = "tickets.example.com" }, []string{"notify.public_url"}},
		{"another scheme", func(n *Notify) { n.SMTPURL = "http://user:hunter2@mail.example" }, []string{"notify.smtp_url"}},
		{"credentials in clear", func(n *Notify) { n.SMTPURL = "smtp+insecure://user:hunter2@mail.example" }, []string{"notify.smtp_url"}},
		{"no per-address limit", func(n *Notify) { n.PerAddress = 0 }, []string{"notify.per_address"}},
		{"a link that opens a second", func(n *Notify) { n.LinkTTL = time.Second }, []string{"notify.link_ttl"}},
		{"a link that opens for days", func(n *Notify) { n.LinkTTL = 72 * time.Hour }, []string{"notify.link_ttl"}},
	}
	for _, tc := range cases {
		n := on
		tc.change(&n)
		errs := n.Validate()
		if len(tc.want) == 0 && len(errs) > 0 {
			t.Errorf("%s: Validate = %v, want no error", tc.name, errs)
		}
		if len(tc.want) > 0 && len(errs) != len(tc.want) {
			t.Errorf("%s: Validate = %v, want %d errors naming %v", tc.name, errs, len(tc.want), tc.want)
		}
		for i, e := range errs {
			if strings.Contains(e.Error(), "hunter2") {
				t.Errorf("%s: an error repeats the password: %v", tc.name, e)
			}
			if i < len(tc.want) && !strings.Contains(e.Error(), tc.want[i]) {
				t.Errorf("%s: error %v, want one naming %s", tc.name, e, tc.want[i])
			}
		}
	}
}

func TestDefaultNotifyIsOffWithTheLimitsItRunsWith(t *testing.T) {
	d := DefaultNotify()
	if d.SMTPURL != "" || d.PerAddress != 5 || d.LinkTTL != 30*time.Minute {
		t.Errorf("DefaultNotify() = %+v, want mail off, 5 an hour per address, links for 30m", d)
	}
	if errs := d.Validate(); len(errs) > 0 {
		t.Errorf("DefaultNotify().Validate() = %v, want none", errs)
	}
	s := Notify{SMTPURL: "smtp://m.example", From: "a@b.example", PublicURL: "https://t.example", PerAddress: 3, LinkTTL: time.Hour}.Settings()
	if s.SMTPURL != "smtp://m.example" || s.From != "a@b.example" || s.PublicURL != "https://t.example" || s.PerAddress != 3 || s.LinkTTL != time.Hour {
		t.Errorf("Settings() = %+v, want the same settings", s)
	}
}

// Once Config carries notify.* (its field tagged koanf:"notify"), every setting is read from
// WAITROOM_NOTIFY_*, and a bad one fails Load. Until then the test has nothing to load.
func TestNotifyIsReadFromTheEnvironment(t *testing.T) {
	var field reflect.StructField
	for i := range reflect.TypeFor[Config]().NumField() {
		if f := reflect.TypeFor[Config]().Field(i); f.Tag.Get("koanf") == "notify" && f.Type == reflect.TypeFor[Notify]() {
			field = f
		}
	}
	if field.Index == nil {
		t.Skip("config.Config has no notify field yet")
	}
	vars := map[string]string{
		"WAITROOM_NOTIFY_SMTP_URL":    "smtp+insecure://127.0.0.1:1025",
		"WAITROOM_NOTIFY_FROM":        "tickets@example.com",
		"WAITROOM_NOTIFY_PUBLIC_URL":  "http://localhost:8080",
		"WAITROOM_NOTIFY_PER_ADDRESS": "2",
		"WAITROOM_NOTIFY_LINK_TTL":    "45m",
	}
	c, err := Load("", false, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	want := Notify{SMTPURL: "smtp+insecure://127.0.0.1:1025", From: "tickets@example.com", PublicURL: "http://localhost:8080", PerAddress: 2, LinkTTL: 45 * time.Minute}
	if got := reflect.ValueOf(c).FieldByIndex(field.Index).Interface(); got != want {
		t.Errorf("notify from the environment = %+v, want %+v", got, want)
	}
	if got := reflect.ValueOf(Default()).FieldByIndex(field.Index).Interface(); got != DefaultNotify() {
		t.Errorf("Default().Notify = %+v, want DefaultNotify() %+v", got, DefaultNotify())
	}
	vars["WAITROOM_NOTIFY_FROM"] = ""
	if _, err := Load("", false, env(vars)); err == nil || !strings.Contains(err.Error(), "notify.from") {
		t.Errorf("Load without notify.from = %v, want an error naming it", err)
	}
}
