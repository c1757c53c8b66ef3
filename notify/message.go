// What the e-mail says, in English and in Korean: the subject, the plain-text body with the link and, for
// an offer or an admission that lapses, its deadline; and the message built for go-mail.

package notify

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	gomail "github.com/wneessen/go-mail"
)

// maxNameBytes bounds the screening's name in the subject.
const maxNameBytes = 200

// kst is Korea's time, in which the Korean e-mails give their times (a fixed zone: no time zone database
// is needed in the image, and Korea keeps no summer time).
var kst = time.FixedZone("KST", 9*60*60)

// words are one language's sentences; %s takes, in turn, the screening's name, the link, a time.
type words struct {
	subject       string
	offer         string
	admission     string
	open          string
	offerUntil    string
	admittedUntil string
	once          string
	why           string
	when          func(time.Time) string
}

var languages = map[string]words{
	"en": {
		subject:       "Your turn: seats for %s are yours to book",
		offer:         "Seats for %s have come free, and it is your turn to book them.",
		admission:     "It is your turn in the line for %s: you are admitted and may book your seats now.",
		open:          "Open this link to take your place and choose your seats:",
		offerUntil:    "The offer holds until %s.",
		admittedUntil: "Your admission holds until %s.",
		once:          "The link opens once, until %s. Do not share it: whoever opens it first takes your place.",
		why:           "You get this e-mail because you asked to be told when it was your turn. No other e-mail will follow.",
		when:          func(t time.Time) string { return t.UTC().Format("Mon 2 Jan 2006, 15:04 MST") },
	},
	"ko": {
		subject:       "차례가 되었습니다: %s 좌석을 지금 예매하실 수 있습니다",
		offer:         "%s의 좌석이 나와 고객님께서 예매하실 차례가 되었습니다.",
		admission:     "%s 대기열에서 고객님의 차례가 되었습니다. 지금 입장하여 좌석을 예매하실 수 있습니다.",
		open:          "아래 링크를 열어 자리를 이어받고 좌석을 고르세요:",
		offerUntil:    "이 기회는 %s까지 유효합니다.",
		admittedUntil: "입장은 %s까지 유효합니다.",
		once:          "링크는 %s까지 한 번만 열 수 있습니다. 다른 사람과 공유하지 마세요. 먼저 여는 사람이 자리를 가져갑니다.",
		why:           "차례가 되면 알려 달라고 요청하셔서 이 메일을 보내 드립니다. 이후 다른 메일은 보내지 않습니다.",
		when:          func(t time.Time) string { return t.In(kst).Format("2006년 1월 2일 15:04") + " (한국 시간)" },
	},
}

// render is m's subject and plain-text body, with its link.
func render(m message, link string) (subject, body string) {
	w, ok := languages[m.Lang]
	if !ok {
		w = languages["en"]
	}
	name := cleanName(m.Name)
	var b strings.Builder
	if m.Kind == Offer {
		fmt.Fprintf(&b, w.offer, name)
	} else {
		fmt.Fprintf(&b, w.admission, name)
	}
	b.WriteString("\n\n" + w.open + "\n" + link + "\n\n")
	if m.Deadline != nil {
		until := w.offerUntil
		if m.Kind != Offer {
			until = w.admittedUntil
		}
		fmt.Fprintf(&b, until+"\n", w.when(*m.Deadline))
	}
	fmt.Fprintf(&b, w.once+"\n\n", w.when(m.LinkExpires))
	b.WriteString(w.why + "\n")
	return fmt.Sprintf(w.subject, name), b.String()
}

// cleanName is a screening's name fit for a subject line: no control characters (a line break would end
// the header), spaces folded, at most maxNameBytes cut on a rune.
func cleanName(name string) string {
	name = strings.Join(strings.FieldsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if len(name) > maxNameBytes {
		name = strings.ToValidUTF8(name[:maxNameBytes], "")
	}
	return name
}

// compose builds m's e-mail. Its Message-ID is the same on every attempt, so a mail client shows one
// e-mail when an attempt the server took was not recorded and the e-mail went again.
func (s *Service) compose(m message) (*gomail.Msg, error) {
	if m.Nonce == nil {
		return nil, fmt.Errorf("notify: e-mail %d has no link", m.ID)
	}
	subject, body := render(m, s.link(m.Screening, *m.Nonce))
	msg := gomail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return nil, fmt.Errorf("notify: from: %w", err)
	}
	if err := msg.To(m.Email); err != nil {
		return nil, fmt.Errorf("notify: to: %w", err)
	}
	msg.Subject(subject)
	msg.SetMessageIDWithValue(fmt.Sprintf("notify.%d.%.16s@%s", m.ID, m.NonceHash, s.domain))
	msg.SetDateWithValue(s.now())
	msg.SetUserAgent("waitroom")
	msg.SetBodyString(gomail.TypeTextPlain, body)
	return msg, nil
}
