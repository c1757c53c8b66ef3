//go:build faults

// The admission log of the random run, read from PostgreSQL once the writer stored everything, held to what
// the users saw (docs/reliability.md, "The admission log under the random schedule").

package random

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// logSettleWithin bounds the wait for the log's writer to store every record Redis holds.
const logSettleWithin = 20 * time.Second

// waitLogStored waits until the database holds every record of the screening's stream: the head's last
// stream id is the stream's last entry, and the head kept its size for a second. It returns how long it
// waited, or an error when that did not happen within logSettleWithin.
func waitLogStored(env *testenv.Env, screening string) (time.Duration, error) {
	began := time.Now()
	stream := queue.Key(env.Prefix, screening, "log")
	var lastSize int64 = -1
	stable := time.Now()
	for time.Since(began) < logSettleWithin {
		var head struct {
			Size     int64  `db:"size"`
			StreamID string `db:"stream_id"`
		}
		err := env.DB.Get(&head, `SELECT size, stream_id FROM admission_log_heads WHERE screening = $1`, screening)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		last, rerr := env.Redis.XRevRangeN(ctx, stream, "+", "-", 1).Result()
		cancel()
		if err == nil && rerr == nil {
			if head.Size != lastSize {
				lastSize, stable = head.Size, time.Now()
			}
			drained := len(last) == 0 || last[0].ID == head.StreamID
			if drained && time.Since(stable) >= time.Second {
				return time.Since(began), nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(began), fmt.Errorf("the admission log of %s still had records to store after %v (size %d)", screening, logSettleWithin, lastSize)
}

// storedRecord is one record of the log as PostgreSQL holds it.
type storedRecord struct {
	Idx    int64  `db:"idx"`
	Record string `db:"record"`
}

// readLog reads the screening's log from PostgreSQL and parses every record.
func readLog(env *testenv.Env, screening string) ([]fairlog.Record, []string, error) {
	var rows []storedRecord
	if err := env.DB.Select(&rows, `SELECT idx, record FROM admission_log WHERE screening = $1 ORDER BY idx`, screening); err != nil {
		return nil, nil, err
	}
	recs := make([]fairlog.Record, len(rows))
	texts := make([]string, len(rows))
	for i, r := range rows {
		if r.Idx != int64(i) {
			return nil, nil, fmt.Errorf("record %d of the log is stored as index %d", i, r.Idx)
		}
		rec, err := fairlog.ParseRecord([]byte(r.Record + "\n"))
		if err != nil {
			return nil, nil, fmt.Errorf("record %d: %w", i, err)
		}
		recs[i], texts[i] = rec, r.Record
	}
	return recs, texts, nil
}

// checkLog waits for the log's writer to store every record, reads the log from PostgreSQL and holds it to
// the users' history (judgeLog); it reports through t and returns the figures for the report line.
func checkLog(t *judge, env *testenv.Env, h *history) string {
	t.Helper()
	waited, err := waitLogStored(env, "rnd")
	if err != nil {
		t.Errorf("admission log: %v", err)
	}
	recs, _, err := readLog(env, "rnd")
	if err != nil {
		t.Errorf("admission log: %v", err)
		return "unread"
	}
	key, err := fairlog.ParseKey(h.logKey)
	if err != nil {
		t.Fatal(err)
	}
	f := judgeLog(logFacts{records: recs, users: h.users, activeTTL: h.plan.activeTTL, restarts: h.faults.spans(h.events), vkey: key.VerifierKey()})
	for _, v := range f.violations {
		t.Errorf("admission log: %s", v)
	}
	return fmt.Sprintf("stored %v after the run; %s", waited.Round(100*time.Millisecond), f)
}

// restartSpan is one Redis restart, Unix ms: killed, and the last rebuild of the line heard after it (0:
// none heard).
type restartSpan struct{ killMs, rebuiltMs int64 }

// spans are the restarts of the run, with the rebuilds heard among the events.
func (c *faultCount) spans(events *eventLog) []restartSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	events.mu.Lock()
	defer events.mu.Unlock()
	out := make([]restartSpan, len(c.restarts))
	for i, at := range c.restarts {
		out[i].killMs = at.UnixMilli()
		next := int64(math.MaxInt64)
		if i+1 < len(c.restarts) {
			next = c.restarts[i+1].UnixMilli()
		}
		for _, ev := range events.evs {
			if ev.Kind == queue.EventRebuilt && ev.TickAtMs >= out[i].killMs && ev.TickAtMs < next {
				out[i].rebuiltMs = max(out[i].rebuiltMs, ev.TickAtMs)
			}
		}
	}
	return out
}

// logFacts is what the log is held to: its records, the users' history, the admissions' time to live (an
// admission told with expiry E was made at E - activeTTL, the `t` of its admit record), the restarts and
// the log's verifier key (for the receipts).
type logFacts struct {
	records   []fairlog.Record
	users     []*user
	activeTTL time.Duration
	restarts  []restartSpan
	vkey      string
}

// logFindings is what judgeLog found: the violations, and the figures.
type logFindings struct {
	violations []string
	records    int
	// told: admissions the users were told; exact: found in the log as their place's admit; lost: made in a
	// restart's lost window (below); renumbered: the place was taken after a restart and moved by the rebuild.
	told, exact, lost, renumbered int
	// strays: places of the lost line admitted after a restart whose user had lost them and taken a new
	// place (the rebuild put the token back from a standing that outlived the user's move; nobody was told).
	strays int
	// logged: places admitted (or directly) in the log; receipts the users held, and those lost in a window.
	logged, receipts, receiptsLost int
	// windows are each restart's lost window, ms: from the last record stored before it to the kill.
	windows []int64
	// checked is how many records the rules checked strictly (all, or those before the first restart), and
	// after how many violations the rules found past them.
	checked, after int
	afterKinds     map[string]int
}

func (f logFindings) String() string {
	s := fmt.Sprintf("%d records; %d admissions told: %d in the log as told, %d lost with Redis's stream, %d renumbered by a rebuild; %d admitted in the log, %d of them places their users had lost to a restart; %d receipts, %d lost with the stream; lost windows %v ms; rules: %d records checked, 0 violations allowed",
		f.records, f.told, f.exact, f.lost, f.renumbered, f.logged, f.strays, f.receipts, f.receiptsLost, f.windows, f.checked)
	if f.checked < f.records {
		s += fmt.Sprintf(", then %d violations after the first restart (its rebuild is not logged): %v", f.after, f.afterKinds)
	}
	return s
}

// admitted is one admission the log holds: the record's index and time, the place and the token hash the
// place was last given to before it (for a direct admission, no place).
type admitted struct {
	idx, t, seq int64
	h           string
	claimed     bool
}

// judgeLog holds the log to the history:
//   - every receipt a user was given names a place record of the log (its number, token hash and time);
//   - every admission a user was told is in the log: an admit record at the admission's time (expiry -
//     active_ttl) admitting a place last given to the user's token;
//   - the log admits nobody else: every place it admits is one a user was told admitted;
//   - in order: the users' admissions, in the order the log has them, were made at times that never go
//     back, and each user's come in the order it was told them;
//   - the rules of the line (fairlog.Check, as verify-log runs them) hold.
//
// A Redis restart excuses exactly what it explains: a receipt or an admission made on the old Redis after
// the last record the log stored from it (its lost window: those records were still in the stream); and an
// admission of a place taken after the restart and before the last rebuild heard, which the rebuild may have
// moved to another number (not logged). The rules cannot follow the line across a rebuild the log does not
// state, so they hold strictly up to the first restart; past it their findings are counted, not failed.
func judgeLog(f logFacts) logFindings {
	out := logFindings{records: len(f.records), afterKinds: map[string]int{}}
	bad := func(format string, args ...any) {
		out.violations = append(out.violations, fmt.Sprintf(format, args...))
	}
	recs := f.records

	// Each restart's lost window: (the last record stored from the old Redis, the kill]. A record with t after
	// the kill ran on the new Redis; those before the first such one are the old Redis's, as the writer stored
	// them.
	lostFrom := make([]int64, len(f.restarts))
	firstNew := len(recs)
	for i, r := range f.restarts {
		end := len(recs)
		for j, rec := range recs {
			if rec.T > r.killMs {
				end = j
				break
			}
		}
		if i == 0 {
			firstNew = end
		}
		for _, rec := range recs[:end] {
			lostFrom[i] = max(lostFrom[i], rec.T)
		}
		out.windows = append(out.windows, r.killMs-lostFrom[i])
	}
	inLostWindow := func(t int64) bool {
		for i, r := range f.restarts {
			if t >= lostFrom[i] && t <= r.killMs {
				return true
			}
		}
		return false
	}
	placedBetweenLossAndRebuild := func(t int64) bool {
		for _, r := range f.restarts {
			if r.rebuiltMs > 0 && t > r.killMs && t <= r.rebuiltMs {
				return true
			}
		}
		return false
	}

	// The log's places and admissions, each admitted place resolved to the token hash it was last given to.
	type place struct {
		seq, t int64
		h      string
	}
	placedBy := map[place]bool{}
	lastPlace := map[string]place{} // by token hash: its latest place record
	current := map[int64]string{}   // seq -> token hash, as the log last gave it
	var log []*admitted
	for i, r := range recs {
		switch r.Kind {
		case fairlog.KindPlace:
			p := place{seq: r.Seq, t: r.T, h: r.H}
			placedBy[p], lastPlace[r.H], current[r.Seq] = true, p, r.H
		case fairlog.KindAdmit:
			for _, q := range r.Seqs {
				log = append(log, &admitted{idx: int64(i), t: r.T, seq: q, h: current[q]})
			}
		case fairlog.KindDirect:
			log = append(log, &admitted{idx: int64(i), t: r.T, h: r.H})
		}
	}
	out.logged = len(log)

	// Every receipt names a place record.
	for _, u := range f.users {
		for _, text := range u.receipts {
			out.receipts++
			rc, err := fairlog.OpenReceipt([]byte(text), f.vkey)
			switch {
			case err != nil:
				bad("user %d's receipt does not verify: %v", u.n, err)
			case rc.Seq == 0:
				bad("user %d's receipt names pre-queue entry %d: the run has no pre-queue", u.n, rc.Entry)
			case placedBy[place{seq: rc.Seq, t: rc.Time, h: rc.TokenHash}]:
			case inLostWindow(rc.Time):
				out.receiptsLost++
			default:
				bad("user %d's receipt for place %d (token %s…, time %d) names no place record of the log", u.n, rc.Seq, rc.TokenHash[:8], rc.Time)
			}
		}
	}

	// Every admission told is in the log; first those found as told, then those a restart explains.
	byTime := map[int64][]*admitted{}
	for _, a := range log {
		byTime[a.t] = append(byTime[a.t], a)
	}
	type told struct {
		u   *user
		i   int
		t   int64
		h   string
		got *admitted
	}
	var all []*told
	ttl := f.activeTTL.Milliseconds()
	for _, u := range f.users {
		for i, exp := range u.admissions {
			tl := &told{u: u, i: i, t: exp - ttl, h: fairlog.TokenHash(u.admittedAs[i])}
			all = append(all, tl)
			for _, a := range byTime[tl.t] {
				if !a.claimed && a.h == tl.h {
					a.claimed, tl.got = true, a
					out.exact++
					break
				}
			}
		}
	}
	out.told = len(all)
	for _, tl := range all {
		if tl.got != nil {
			continue
		}
		if inLostWindow(tl.t) {
			out.lost++
			continue
		}
		if p, ok := lastPlace[tl.h]; ok && placedBetweenLossAndRebuild(p.t) {
			for _, a := range byTime[tl.t] {
				if !a.claimed && a.seq > 0 {
					a.claimed, tl.got = true, a
					out.renumbered++
					break
				}
			}
			if tl.got != nil {
				continue
			}
		}
		bad("user %d's admission %d (token %s…, made at %d, place %v) is not in the log", tl.u.n, tl.i+1, tl.h[:8], tl.t, lastPlace[tl.h].seq)
	}
	// Nobody else, but for a place of the lost line admitted after a restart whose user had lost it (the test
	// saw the user told a new place) and so was not told: a standing of the old place outlived the move.
	movedOn := map[string]bool{} // the token hashes of the users who lost a place to a restart
	for _, u := range f.users {
		if len(u.lost) == 0 {
			continue
		}
		for _, r := range u.receipts {
			if rc, err := fairlog.OpenReceipt([]byte(r), f.vkey); err == nil {
				movedOn[rc.TokenHash] = true
			}
		}
	}
	afterRestart := func(t int64) bool {
		return slices.ContainsFunc(f.restarts, func(r restartSpan) bool { return r.killMs < t })
	}
	for _, a := range log {
		switch {
		case a.claimed:
		case movedOn[a.h] && afterRestart(a.t):
			out.strays++
		default:
			bad("record %d admits place %d (token %s…) at %d, which no user was told", a.idx, a.seq, short(a.h), a.t)
		}
	}
	// In order: along the log, the admissions told were made at times that never go back; and each user's
	// admissions are in the log in the order it was told them.
	var found []*told
	for _, tl := range all {
		if tl.got != nil {
			found = append(found, tl)
		}
	}
	slices.SortStableFunc(found, func(a, b *told) int { return cmp.Compare(a.got.idx, b.got.idx) })
	for i := 1; i < len(found); i++ {
		if a, b := found[i-1], found[i]; b.t < a.t {
			bad("record %d admits user %d (made at %d) after record %d admitted user %d (made at %d, later)", b.got.idx, b.u.n, b.t, a.got.idx, a.u.n, a.t)
		}
	}
	last := map[*user]int64{}
	for _, tl := range all {
		if tl.got == nil {
			continue
		}
		if prev, ok := last[tl.u]; ok && tl.got.idx <= prev {
			bad("user %d's admission %d is record %d, not after its admission before it (record %d)", tl.u.n, tl.i+1, tl.got.idx, prev)
		}
		last[tl.u] = tl.got.idx
	}

	// The rules: strictly up to the first restart.
	strict := fairlog.Check("rnd", recs[:firstNew])
	out.checked = firstNew
	for _, v := range strict.Violations {
		bad("rules: %s", v)
	}
	if strict.OfferedPast > 0 {
		// Every waitlisted user here waits for one seat: no offer may pass a lower place.
		bad("rules: %d places were offered seats while a lower place still waited, with no party larger than one", strict.OfferedPast)
	}
	if firstNew < len(recs) {
		whole := fairlog.Check("rnd", recs)
		for _, v := range whole.Violations[len(strict.Violations):] {
			out.after++
			out.afterKinds[violationKind(v)]++
		}
	}
	return out
}

// violationKind is a rule's violation with its numbers as N, to count them by kind.
func violationKind(v string) string {
	_, v, _ = strings.Cut(v, ": ")
	v, _, _ = strings.Cut(v, " (")
	return digits.ReplaceAllString(v, "N")
}

var digits = regexp.MustCompile(`[0-9]+`)

// short is the start of a token hash, for a message ("-" for none).
func short(h string) string {
	if h == "" {
		return "-"
	}
	return h[:8]
}
