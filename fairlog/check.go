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
	// Beacon is the beacon the pre-queue's commitment names ("" none, NoBeacon: its server could not reach
	// it), Round the round it names; Mixed says the opening mixed that round in, its signature checked
	// against the chain's public key. Late is how many entries came after the round was due, placed after
	// the shuffled ones in entry order.
	Beacon string
	Round  int64
	Mixed  bool
	Late   int
	// OfferedPast counts the places a waitlist's offer admitted while a lower place still waited: a larger
	// party passed over (docs/protocol.md 5.4), which the log cannot judge, as it holds no party sizes.
	OfferedPast int
	// Notes say what the log proves where it proves less than it could (a beacon not reached, not mixed
	// in, a chain this package does not know): not violations of the rules.
	Notes      []string
	Violations []string
	Receipt    *Standing

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
	t     int64
	index int64
	gone  bool
	seq   int64
	key   uint64 // its shuffle key at the opening
	late  bool   // it came after the beacon's round was due: placed after the shuffled ones, by number
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

// Check checks the screening's records against the rules of the line, for a log whose pre-queue names no
// beacon (CheckWith checks one that does).
func Check(screening string, records []Record) *Report {
	return CheckWith(screening, records, nil)
}

// CheckWith checks the screening's records against the rules of the line, with the chain info of the
// beacons its commitments name (by URL; Beacon.Info fetches and checks one).
func CheckWith(screening string, records []Record, chains map[string]ChainInfo) *Report {
	rep := &Report{Screening: screening, Size: int64(len(records)), places: map[int64]*placed{}, entries: map[int64]*entry{}}
	var (
		commit           string
		committed        Record // the commitment, with its beacon and round
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
			commit, committed = r.Seed, r
			rep.Beacon, rep.Round = r.Beacon, r.Round
			if r.Beacon == NoBeacon {
				rep.note("the server had a beacon but could not reach it when it drew the seed (beacon=%s): the order follows from the server's seed alone, which the server knew from the start", NoBeacon)
			}
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
			rep.entries[r.N] = &entry{h: r.H, t: r.T, index: int64(i)}
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
			keySeed, dueMs := rep.beaconSeed(i, r, committed, seed, len(opening), chains)
			for _, n := range opening {
				e := rep.entries[n]
				e.key, e.late = ShuffleKey(keySeed, e.h), dueMs > 0 && e.t >= dueMs
				if e.late {
					rep.Late++
				}
			}
			slices.SortFunc(opening, func(a, b int64) int {
				ea, eb := rep.entries[a], rep.entries[b]
				switch {
				case ea.late != eb.late && ea.late:
					return 1
				case ea.late != eb.late:
					return -1
				case !ea.late && ea.key < eb.key:
					return -1
				case !ea.late && ea.key > eb.key:
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
				rep.checkOpeningPlace(i, r, opening, &openingAt)
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
				if l := lowest(); q != l && r.Via == "offer" {
					// A waitlist's offer may pass a larger party whose seats have not come back yet
					// (docs/protocol.md 5.4); the log does not record party sizes, so it is counted, not judged.
					rep.OfferedPast++
				} else if q != l {
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
			if r.Why == "waitlist" {
				break // sold out, the line kept as a waitlist: nobody is given up
			}
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

// beaconSeed checks a reveal's beacon fields against the commitment's and returns the seed the opening's
// keys come from (the revealed seed, or it mixed with the beacon's round) and when the round was due (Unix
// ms; 0: no round mixed in, every entry is shuffled). waiting is how many entries the opening places.
func (rep *Report) beaconSeed(i int, r, committed Record, seed []byte, waiting int, chains map[string]ChainInfo) ([]byte, int64) {
	named := committed.Beacon != "" && committed.Beacon != NoBeacon
	switch {
	case !named && r.Round != 0:
		rep.violate(i, "the reveal mixes in beacon round %d, but the commitment named no beacon round", r.Round)
		return seed, 0
	case !named:
		return seed, 0
	case r.Round == 0:
		if waiting > 0 {
			rep.violate(i, "the commitment named round %d of beacon %s, but the reveal mixes in no round and says none was fetched", committed.Round, committed.Beacon)
		}
		return seed, 0
	case r.Round != committed.Round:
		rep.violate(i, "the reveal mixes in beacon round %d, but the commitment named round %d", r.Round, committed.Round)
		return seed, 0
	case r.Randomness == NoBeacon:
		rep.note("the server could not fetch round %d of its beacon %s at the opening (randomness=%s): the order follows from its seed alone, which the server knew from the start, so it proves no more than a log without a beacon", r.Round, committed.Beacon, NoBeacon)
		return seed, 0
	}
	chain, ok := chains[committed.Beacon]
	if !ok {
		rep.violate(i, "the commitment names beacon %s, whose chain info this check was not given: its round cannot be checked", committed.Beacon)
		return seed, 0
	}
	round := Round{Number: r.Round, Randomness: r.Randomness, Signature: r.Signature}
	if err := round.Check(chain); err != nil {
		rep.violate(i, "beacon round %d as the reveal states it is not the chain's: %v", r.Round, err)
		return seed, 0
	}
	rep.Mixed = true
	b, _ := ParseBeacon(committed.Beacon)
	if name, ok := knownChains[b.ChainHash]; ok {
		rep.note("beacon: round %d of %s (%s), mixed into the seed; its signature checks against the chain's public key", r.Round, committed.Beacon, name)
	} else {
		rep.note("beacon: round %d of %s, mixed into the seed; its signature checks against the chain's public key, but this verifier does not know chain %s: check it is a public beacon you trust, not one the operator runs", r.Round, committed.Beacon, b.ChainHash)
	}
	return MixSeed(seed, r.Randomness), chain.TimeOfRound(r.Round).UnixMilli()
}

func (rep *Report) note(format string, args ...any) {
	rep.Notes = append(rep.Notes, fmt.Sprintf(format, args...))
}

// checkOpeningPlace checks a place the opening gave entry r.N: the next in the opening's order (or one of
// equal key among the shuffled).
func (rep *Report) checkOpeningPlace(i int, r Record, opening []int64, at *int) {
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
	w := rep.entries[want]
	if r.N != want && (e.late || w.late || e.key != w.key) {
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
	if rep.OfferedPast > 0 {
		out = append(out, fmt.Sprintf("%d places were offered seats while a lower place still waited on the waitlist (a larger party whose seats had not come back: not judged, the log holds no party sizes)", rep.OfferedPast))
	}
	if rep.Root != "" {
		out = append(out, "checkpoint: "+rep.Root+", signed by the log's key, consistent with every checkpoint seen before")
	}
	if rep.Late > 0 {
		out = append(out, fmt.Sprintf("beacon: %d pre-queue entries came after round %d was due: placed after the shuffled ones, in the order they came", rep.Late, rep.Round))
	}
	for _, n := range rep.Notes {
		out = append(out, "note: "+n)
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
