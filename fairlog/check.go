// The rules of the line, checked over a log's records (docs/admission-log.md, "What the verifier checks",
// 3), and where a receipt stands.

package fairlog

import (
	"fmt"
	"slices"
	"strings"
)

// Report is what a check found: the log's figures, every violation of the rules (none: the log is
// consistent with them), and, after CheckReceipt, where the receipt stands.
type Report struct {
	Screening string
	Size      int64
	Root      string // the checkpoint's root, base64; "" when Check ran without one
	// Places is how many places were taken; Admitted how many admitted (and Direct straight away, in no
	// place); GivenUp how many left, were abandoned or closed before admission; Entries and Shuffled the
	// pre-queue's entries and the places the opening gave them.
	Places, Admitted, Direct, GivenUp, Entries, Shuffled int
	Violations                                           []string
	Receipt                                              *Standing

	places  map[int64]*placed // by seq
	entries map[int64]*entry  // by entry number
	order   []int64           // the admitted places, in the order admitted
}

// Standing is where a receipt's place stands in the log.
type Standing struct {
	Receipt Receipt
	// Index is the record that took the place (or entry).
	Index int64
	// Seq is the place (for an entry's receipt: the place the opening gave it; 0: none yet).
	Seq int64
	// Admitted says whether the place was admitted; Before how many places were admitted before it (or,
	// not admitted, so far), all with lower numbers when AllLower.
	Admitted bool
	Before   int
	AllLower bool
	// GivenUp says the place was given up before its admission (left, abandoned, the line closed): the
	// places admitted after it may have any number.
	GivenUp bool
}

// String says where the receipt stands, in a sentence.
func (s *Standing) String() string {
	switch {
	case s.Seq == 0:
		return fmt.Sprintf("your pre-queue entry %d is record %d of the log; it has no place in the line yet", s.Receipt.Entry, s.Index)
	case s.GivenUp:
		return fmt.Sprintf("your place %d was given up before its turn (left, abandoned or closed); %d places were admitted before it was", s.Seq, s.Before)
	case s.Admitted && s.AllLower:
		return fmt.Sprintf("your place %d was admitted; %d places were admitted before yours, all with lower numbers", s.Seq, s.Before)
	case s.Admitted:
		return fmt.Sprintf("your place %d was admitted; %d places were admitted before yours, SOME WITH HIGHER NUMBERS", s.Seq, s.Before)
	case s.AllLower:
		return fmt.Sprintf("your place %d is not admitted yet; %d places were admitted so far, all with lower numbers", s.Seq, s.Before)
	}
	return fmt.Sprintf("your place %d is not admitted yet; %d places were admitted so far, SOME WITH HIGHER NUMBERS", s.Seq, s.Before)
}

type placed struct {
	h         string
	index     int64
	entry     int64
	admitted  int // its position in order + 1; 0: not admitted
	gone      bool
	goneAfter int // how many were admitted when it was given up
}

type entry struct {
	h     string
	index int64
	gone  bool
	seq   int64
}

// maxViolations bounds the violations a report keeps: a broken log says so without a list without end.
const maxViolations = 100

func (rep *Report) violate(i int, format string, args ...any) {
	if len(rep.Violations) == maxViolations {
		rep.Violations = append(rep.Violations, "… and more")
	}
	if len(rep.Violations) > maxViolations {
		return
	}
	rep.Violations = append(rep.Violations, fmt.Sprintf("record %d: ", i)+fmt.Sprintf(format, args...))
}

// Check checks the screening's records against the rules of the line.
func Check(screening string, records []Record) *Report {
	rep := &Report{Screening: screening, Size: int64(len(records)), places: map[int64]*placed{}, entries: map[int64]*entry{}}
	var (
		commit           string
		seed             []byte
		revealed         bool
		opening          []int64 // the entries the opening must place, in key order
		openingAt        = -1    // how many of them are placed; -1: no opening under way
		nextEntry        = int64(1)
		nextSeq          = int64(1)
		low              = int64(1) // no place below it still waits
		paused, closed   bool
		paceBatch, paceM int64 = -1, -1
	)
	waiting := func(q int64) bool {
		p := rep.places[q]
		return p != nil && p.admitted == 0 && !p.gone
	}
	lowest := func() int64 {
		for low < nextSeq && !waiting(low) {
			low++
		}
		return low
	}
	endOpening := func(i int) {
		if openingAt >= 0 && openingAt < len(opening) {
			rep.violate(i, "the opening placed %d of the %d entries it had to", openingAt, len(opening))
		}
		openingAt = -1
	}
	for i, r := range records {
		if r.Kind != KindPlace || r.N == 0 {
			endOpening(i)
		}
		switch r.Kind {
		case KindCommit:
			if commit != "" || nextEntry > 1 || nextSeq > 1 {
				rep.violate(i, "a seed committed after the log began (a second commit, or after entries or places)")
			}
			commit = r.Seed
		case KindPre:
			switch {
			case commit == "":
				rep.violate(i, "a pre-queue entry with no seed committed before it")
			case revealed:
				rep.violate(i, "a pre-queue entry after the opening")
			}
			if r.N != nextEntry {
				rep.violate(i, "pre-queue entry %d, want %d (entries are numbered 1, 2, 3, …)", r.N, nextEntry)
			}
			nextEntry = max(nextEntry, r.N+1)
			rep.entries[r.N] = &entry{h: r.H, index: int64(i)}
			rep.Entries++
		case KindPreGone:
			e := rep.entries[r.N]
			if e == nil || e.gone || revealed {
				rep.violate(i, "pre-queue entry %d given up, but it is not waiting in the pre-queue", r.N)
				continue
			}
			e.gone = true
		case KindReveal:
			if commit == "" || revealed {
				rep.violate(i, "a seed revealed with no commitment, or twice")
				continue
			}
			seed = decodeHex(r.Seed)
			if SeedCommit(seed) != commit {
				rep.violate(i, "the revealed seed's SHA-256 is %s, but the log committed to %s", SeedCommit(seed), commit)
			}
			revealed = true
			for n, e := range rep.entries {
				if !e.gone {
					opening = append(opening, n)
				}
			}
			slices.SortFunc(opening, func(a, b int64) int {
				ka, kb := ShuffleKey(seed, rep.entries[a].h), ShuffleKey(seed, rep.entries[b].h)
				switch {
				case ka < kb:
					return -1
				case ka > kb:
					return 1
				}
				return int(a - b)
			})
			openingAt = 0
		case KindPlace:
			if r.Seq != nextSeq {
				rep.violate(i, "place %d, want %d (places are numbered 1, 2, 3, …, none twice)", r.Seq, nextSeq)
			}
			if r.N > 0 {
				rep.checkOpeningPlace(i, r, seed, opening, &openingAt)
			} else if commit != "" && !revealed {
				rep.violate(i, "a place before the opening of a pre-queue")
			}
			if rep.places[r.Seq] == nil {
				rep.places[r.Seq] = &placed{h: r.H, index: int64(i), entry: r.N}
				rep.Places++
			}
			nextSeq = max(nextSeq, r.Seq+1)
		case KindAdmit:
			if stopped := stoppedBy(paused, closed); stopped != "" {
				rep.violate(i, "an admission while %s", stopped)
			}
			if r.Via == "tick" && int64(len(r.Seqs)) > r.Batch {
				rep.violate(i, "a tick admitted %d, more than its batch of %d", len(r.Seqs), r.Batch)
			}
			if r.Active > r.Max {
				rep.violate(i, "%d admitted at once, more than max_active %d", r.Active, r.Max)
			}
			if paceBatch >= 0 && (r.Batch != paceBatch || r.Max != paceM) {
				rep.violate(i, "an admission with batch %d and max %d, but the pace in force is batch %d and max %d", r.Batch, r.Max, paceBatch, paceM)
			}
			for _, q := range r.Seqs {
				p := rep.places[q]
				switch {
				case p == nil:
					rep.violate(i, "place %d admitted, but no record gave it", q)
					continue
				case p.admitted > 0:
					rep.violate(i, "place %d admitted twice", q)
					continue
				case p.gone:
					rep.violate(i, "place %d admitted after it was given up", q)
					continue
				}
				if l := lowest(); q != l {
					rep.violate(i, "place %d admitted while place %d, lower, still waits", q, l)
				}
				rep.order = append(rep.order, q)
				p.admitted = len(rep.order)
				rep.Admitted++
			}
		case KindDirect:
			if stopped := stoppedBy(paused, closed); stopped != "" {
				rep.violate(i, "a direct admission while %s", stopped)
			} else if lowest() < nextSeq {
				rep.violate(i, "a direct admission while place %d waits", lowest())
			}
			if r.Active > r.Max {
				rep.violate(i, "%d admitted at once, more than max_active %d", r.Active, r.Max)
			}
			rep.Direct++
		case KindGone:
			if !waiting(r.Seq) {
				rep.violate(i, "place %d given up, but it is not waiting", r.Seq)
				continue
			}
			rep.places[r.Seq].gone, rep.places[r.Seq].goneAfter = true, len(rep.order)
			rep.GivenUp++
		case KindPace:
			paceBatch, paceM = r.Batch, r.Max
		case KindPause:
			paused = true
		case KindResume:
			paused = false
		case KindClose:
			closed = true
			// The line is dropped: every place still waiting and every pre-queue entry is given up.
			for q := lowest(); q < nextSeq; q++ {
				if waiting(q) {
					rep.places[q].gone, rep.places[q].goneAfter = true, len(rep.order)
					rep.GivenUp++
				}
			}
			if !revealed {
				for _, e := range rep.entries {
					e.gone = true
				}
			}
		case KindReopen:
			closed = false
		}
	}
	endOpening(len(records))
	return rep
}

// stoppedBy says what stops admission ("paused", "closed"), or "" when nothing does.
func stoppedBy(paused, closed bool) string {
	switch {
	case paused:
		return "paused"
	case closed:
		return "closed"
	}
	return ""
}

// checkOpeningPlace checks a place the opening gave entry r.N: the next in key order (or one of equal key).
func (rep *Report) checkOpeningPlace(i int, r Record, seed []byte, opening []int64, at *int) {
	e := rep.entries[r.N]
	switch {
	case *at < 0:
		rep.violate(i, "a place for pre-queue entry %d outside the opening", r.N)
		return
	case *at >= len(opening):
		rep.violate(i, "the opening placed more entries than the pre-queue held")
		return
	case e == nil || e.gone || e.seq > 0:
		rep.violate(i, "the opening placed entry %d, which is not waiting in the pre-queue", r.N)
		return
	case e.h != r.H:
		rep.violate(i, "the opening placed entry %d with token hash %s, but it entered with %s", r.N, r.H, e.h)
	}
	want := opening[*at]
	if r.N != want && ShuffleKey(seed, e.h) != ShuffleKey(seed, rep.entries[want].h) {
		rep.violate(i, "the opening placed entry %d where the shuffle puts entry %d", r.N, want)
	}
	if r.N != want {
		// A tie: the two swap in the expected order.
		if j := slices.Index(opening, r.N); j > *at {
			opening[*at], opening[j] = opening[j], opening[*at]
		}
	}
	e.seq = r.Seq
	*at++
	rep.Shuffled++
}

func decodeHex(s string) []byte {
	out := make([]byte, len(s)/2)
	for i := range out {
		out[i] = unhex(s[2*i])<<4 | unhex(s[2*i+1])
	}
	return out
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// CheckReceipt finds r's record in the log the report checked and says where it stands, or adds a
// violation when the log does not hold it.
func (rep *Report) CheckReceipt(r Receipt) {
	if r.Screening != rep.Screening {
		rep.violate(-1, "the receipt is for screening %q, the log for %q", r.Screening, rep.Screening)
		return
	}
	s := &Standing{Receipt: r, Seq: r.Seq}
	if r.Entry > 0 {
		e := rep.entries[r.Entry]
		if e == nil || e.h != r.TokenHash {
			rep.violate(-1, "the log holds no pre-queue entry %d of token hash %s", r.Entry, r.TokenHash)
			return
		}
		s.Index, s.Seq = e.index, e.seq
	}
	if s.Seq > 0 {
		p := rep.places[s.Seq]
		if p == nil || p.h != r.TokenHash {
			rep.violate(-1, "the log holds no place %d of token hash %s", s.Seq, r.TokenHash)
			return
		}
		if r.Entry == 0 {
			s.Index = p.index
		}
		s.Admitted, s.GivenUp = p.admitted > 0, p.gone
		before := rep.order
		if s.Admitted {
			before = rep.order[:p.admitted-1]
		} else if p.gone {
			before = rep.order[:p.goneAfter]
		}
		s.Before, s.AllLower = len(before), true
		for _, q := range before {
			if q > s.Seq {
				s.AllLower = false
			}
		}
	}
	rep.Receipt = s
}

// Lines is the report in a few lines of text.
func (rep *Report) Lines() []string {
	out := []string{fmt.Sprintf("screening %s: %d records, %d places (%d from a pre-queue of %d entries), %d admitted, %d straight away, %d given up",
		rep.Screening, rep.Size, rep.Places, rep.Shuffled, rep.Entries, rep.Admitted, rep.Direct, rep.GivenUp)}
	if rep.Root != "" {
		out = append(out, "checkpoint: "+rep.Root+", signed by the log's key, consistent with every checkpoint seen before")
	}
	if rep.Receipt != nil {
		out = append(out, "receipt: "+rep.Receipt.String())
	}
	if len(rep.Violations) == 0 {
		out = append(out, "OK: every record follows the rules of the line")
	} else {
		out = append(out, fmt.Sprintf("VIOLATIONS (%d):", len(rep.Violations)))
		for _, v := range rep.Violations {
			out = append(out, "  "+v)
		}
	}
	return out
}

// String is Lines, joined.
func (rep *Report) String() string { return strings.Join(rep.Lines(), "\n") }
