// The log's records (docs/admission-log.md, "Records"): one line each, its kind first, then key=value
// fields in a fixed order.

package fairlog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxRecord bounds a record's bytes, its newline included.
const MaxRecord = 4096

// The kinds of record.
const (
	KindCommit  = "commit"
	KindPre     = "pre"
	KindPreGone = "pre-gone"
	KindReveal  = "reveal"
	KindPlace   = "place"
	KindAdmit   = "admit"
	KindDirect  = "direct"
	KindGone    = "gone"
	KindPace    = "pace"
	KindPause   = "pause"
	KindResume  = "resume"
	KindClose   = "close"
	KindReopen  = "reopen"
)

// layouts is each kind's fields in order; a trailing "?" marks an optional field. Optional fields come
// last, and a record may leave off any run of them at its end (place's n; a commitment's beacon and round;
// a reveal's round, randomness and signature), as far as consistent (Record.consistent) allows.
var layouts = map[string][]string{
	KindCommit:  {"t", "seed", "beacon?", "round?"},
	KindPre:     {"t", "n", "h"},
	KindPreGone: {"t", "n", "why"},
	KindReveal:  {"t", "seed", "round?", "randomness?", "signature?"},
	KindPlace:   {"t", "seq", "h", "n?"},
	KindAdmit:   {"t", "via", "seqs", "batch", "max", "active"},
	KindDirect:  {"t", "h", "max", "active"},
	KindGone:    {"t", "seq", "why"},
	KindPace:    {"t", "interval", "batch", "max"},
	KindPause:   {"t"},
	KindResume:  {"t"},
	KindClose:   {"t", "why"},
	KindReopen:  {"t"},
}

// whys is what each kind's `why` may say.
var whys = map[string][]string{
	KindPreGone: {"left", "abandoned"},
	KindGone:    {"left", "abandoned", "cleared"},
	KindClose:   {"sold_out", "closed", "reset", "waitlist"},
}

// Record is one record, its fields by name; those its kind does not have are zero.
type Record struct {
	Kind string
	T    int64
	// Seed is a commit's commitment or a reveal's seed (64 hex digits).
	Seed string
	// N is a pre-queue entry's number (pre, pre-gone, and a place the opening gave an entry).
	N int64
	// H is a token's hash (pre, place, direct).
	H string
	// Seq is a place's number (place, gone).
	Seq int64
	// Why says why (pre-gone, gone, close).
	Why string
	// Via is an admission's kind: tick or refill.
	Via string
	// Seqs are the places an admission admitted, in increasing order.
	Seqs []int64
	// Batch, Max and Active: the batch size and max_active in force (admit, pace; direct's max), and the
	// number admitted right after (admit, direct).
	Batch, Max, Active int64
	// Interval is a pace's interval between ticks, ms.
	Interval int64
	// Beacon is the beacon a commitment names (its URL, or NoBeacon when its server could not reach it);
	// Round the beacon's round (commit: the one that will be mixed in; reveal: the one that was).
	Beacon string
	Round  int64
	// Randomness and Signature are the round a reveal mixed in (lowercase hex); Randomness is NoBeacon when
	// the server could not fetch it, and the order follows from the seed alone.
	Randomness, Signature string
}

// ErrBadRecord is every record ParseRecord refuses.
var ErrBadRecord = errors.New("malformed record")

func bad(format string, args ...any) error {
	return fmt.Errorf("fairlog: %w: %s", ErrBadRecord, fmt.Sprintf(format, args...))
}

// ParseRecord reads one record, its final newline included, strictly: the kind's fields in their order,
// one space apart, printable ASCII, at most MaxRecord bytes.
func ParseRecord(line []byte) (Record, error) {
	if len(line) > MaxRecord {
		return Record{}, bad("%d bytes, more than %d", len(line), MaxRecord)
	}
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return Record{}, bad("no final newline")
	}
	body := line[:len(line)-1]
	for _, c := range body {
		if c < 0x20 || c > 0x7e {
			return Record{}, bad("a byte %#x that is not printable ASCII", c)
		}
	}
	fields := strings.Split(string(body), " ")
	r := Record{Kind: fields[0]}
	layout, ok := layouts[r.Kind]
	if !ok {
		return Record{}, bad("unknown kind %q", r.Kind)
	}
	values := fields[1:]
	want := len(layout)
	required := want
	for required > 0 && strings.HasSuffix(layout[required-1], "?") {
		required--
	}
	if len(values) < required || len(values) > want {
		return Record{}, bad("%s has %d fields, want %d", r.Kind, len(values), want)
	}
	for i, v := range values {
		name := strings.TrimSuffix(layout[i], "?")
		value, ok := strings.CutPrefix(v, name+"=")
		if !ok {
			return Record{}, bad("%s's field %d is %q, want %s=…", r.Kind, i+1, v, name)
		}
		if err := r.set(name, value); err != nil {
			return Record{}, err
		}
	}
	if err := r.consistent(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// consistent checks the optional fields that go together: a commitment's beacon has a round unless it is
// NoBeacon; a reveal's round has randomness, and randomness a signature unless it is NoBeacon.
func (r *Record) consistent() error {
	switch {
	case r.Kind == KindCommit && r.Beacon != "" && r.Beacon != NoBeacon && r.Round == 0:
		return bad("commit beacon=%s without the round it will mix in", r.Beacon)
	case r.Kind == KindCommit && r.Beacon == NoBeacon && r.Round != 0:
		return bad("commit beacon=%s with a round", NoBeacon)
	case r.Kind == KindReveal && r.Round != 0 && r.Randomness == "":
		return bad("reveal round=%d without its randomness", r.Round)
	case r.Kind == KindReveal && r.Randomness != "" && r.Randomness != NoBeacon && r.Signature == "":
		return bad("reveal randomness=%s without its signature", r.Randomness)
	case r.Kind == KindReveal && r.Randomness == NoBeacon && r.Signature != "":
		return bad("reveal randomness=%s with a signature", NoBeacon)
	}
	return nil
}

// set reads one field.
func (r *Record) set(name, value string) error {
	switch name {
	case "t", "n", "seq", "batch", "max", "active", "interval", "round":
		n, err := parseNumber(value)
		if err != nil {
			return bad("%s=%q: %v", name, value, err)
		}
		if (name == "n" || name == "seq" || name == "round") && n < 1 {
			return bad("%s=%q: numbers start at 1", name, value)
		}
		*r.number(name) = n
	case "seed":
		if !hexHash(value) {
			return bad("seed=%q: want 64 lowercase hex digits", value)
		}
		r.Seed = value
	case "h":
		if !hexHash(value) {
			return bad("h=%q: want 64 lowercase hex digits", value)
		}
		r.H = value
	case "beacon":
		if b, err := ParseBeacon(value); value != NoBeacon && (err != nil || b.URL != value) {
			return bad("beacon=%q: want %s or http(s)://host/…/<chain hash>, with no trailing slash", value, NoBeacon)
		}
		r.Beacon = value
	case "randomness":
		if value != NoBeacon && !hexHash(value) {
			return bad("randomness=%q: want 64 lowercase hex digits or %s", value, NoBeacon)
		}
		r.Randomness = value
	case "signature":
		if len(value) == 0 || len(value) > maxSignature || len(value)%2 != 0 || strings.Trim(value, "0123456789abcdef") != "" {
			return bad("signature=%q: want lowercase hex, at most %d digits", value, maxSignature)
		}
		r.Signature = value
	case "why":
		for _, w := range whys[r.Kind] {
			if value == w {
				r.Why = value
				return nil
			}
		}
		return bad("%s why=%q: want one of %v", r.Kind, value, whys[r.Kind])
	case "via":
		if value != "tick" && value != "refill" && value != "offer" {
			return bad("via=%q: want tick, refill or offer", value)
		}
		r.Via = value
	case "seqs":
		seqs, err := ParseSeqs(value)
		if err != nil {
			return err
		}
		r.Seqs = seqs
	}
	return nil
}

// number is the record's numeric field called name.
func (r *Record) number(name string) *int64 {
	switch name {
	case "t":
		return &r.T
	case "n":
		return &r.N
	case "seq":
		return &r.Seq
	case "batch":
		return &r.Batch
	case "max":
		return &r.Max
	case "active":
		return &r.Active
	case "round":
		return &r.Round
	}
	return &r.Interval
}

// text is the record's text field called name: seed, h, why, via, beacon, randomness or signature.
func (r *Record) text(name string) *string {
	switch name {
	case "seed":
		return &r.Seed
	case "h":
		return &r.H
	case "why":
		return &r.Why
	case "via":
		return &r.Via
	case "beacon":
		return &r.Beacon
	case "randomness":
		return &r.Randomness
	}
	return &r.Signature
}

// maxSignature bounds a beacon signature's hex digits: a BLS12-381 signature is 48 or 96 bytes.
const maxSignature = 2 * 96

// parseNumber reads a decimal number from 0, with no sign and no leading zero.
func parseNumber(s string) (int64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') || s[0] == '+' || s[0] == '-' {
		return 0, errors.New("not a plain decimal number")
	}
	return strconv.ParseInt(s, 10, 64)
}

// hexHash reports whether s is 64 lowercase hex digits.
func hexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Format writes the record as ParseRecord reads it, with its final newline.
func (r Record) Format() []byte {
	var b strings.Builder
	b.WriteString(r.Kind)
	for _, f := range layouts[r.Kind] {
		name := strings.TrimSuffix(f, "?")
		if name != f && r.absent(name) {
			continue
		}
		b.WriteString(" " + name + "=")
		switch name {
		case "t", "n", "seq", "batch", "max", "active", "interval", "round":
			b.WriteString(strconv.FormatInt(*r.number(name), 10))
		case "seqs":
			b.WriteString(FormatSeqs(r.Seqs))
		default:
			b.WriteString(*r.text(name))
		}
	}
	b.WriteByte('\n')
	return []byte(b.String())
}

// absent reports whether the optional field called name (n, round, beacon, randomness, signature) is left
// off.
func (r Record) absent(name string) bool {
	if name == "n" || name == "round" {
		return *r.number(name) == 0
	}
	return *r.text(name) == ""
}

// FormatSeqs writes increasing sequence numbers as ranges: "1-300,302,305-310".
func FormatSeqs(seqs []int64) string {
	var b strings.Builder
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(seqs[i], 10))
		if j > i {
			b.WriteString("-" + strconv.FormatInt(seqs[j], 10))
		}
		i = j + 1
	}
	return b.String()
}

// maxSeqs bounds the places one admission may name, so a hostile log cannot make a verifier expand a
// range without bound.
const maxSeqs = 1_000_000

// ParseSeqs reads FormatSeqs's ranges: increasing, none overlapping or touching the one before (so
// FormatSeqs gives back the same text).
func ParseSeqs(s string) ([]int64, error) {
	if s == "" {
		return nil, bad("seqs is empty")
	}
	var out []int64
	var last int64
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		l, err1 := parseNumber(lo)
		h, err2 := parseNumber(hi)
		if err1 != nil || err2 != nil || l < 1 || h < l || (isRange && h == l) {
			return nil, bad("seqs range %q", part)
		}
		if len(out) > 0 && l <= last+1 {
			return nil, bad("seqs %q: ranges must increase, apart", s)
		}
		if int64(len(out))+h-l+1 > maxSeqs {
			return nil, bad("seqs %q: more than %d places", s, maxSeqs)
		}
		for q := l; q <= h; q++ {
			out = append(out, q)
		}
		last = h
	}
	return out, nil
}
