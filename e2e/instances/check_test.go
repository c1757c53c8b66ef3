// The run held to its promises: the events against the replayed line, every socket's messages, the
// drain and the sale.

package instances

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// check holds the run to its promises; see the test's comment.
func (c *fleet) check(t *testing.T, users, leavers []*user, evs []event, killAt, termAt, gateAt time.Time) {
	t.Helper()
	r := replay(t, users, leavers, ticksInOrder(t, evs), gateAt)
	p := &pushes{replayed: r, passes: c.passes, killAt: killAt, gateAt: gateAt,
		pushed: map[int64]map[int64]*user{}, passTokens: map[string]bool{}, perExpiry: map[string]map[string]bool{}}
	for _, u := range users {
		p.user(t, u)
	}
	p.check(t, leavers)
	restarted := drained(t, users, termAt)
	t.Logf("%d events, %d admitted, %d positions after the kill, %d reconnects checked against ZRANK, %d sockets closed by the drain",
		len(r.ticks), len(r.admittedBy), p.positionsAfterKill, p.reconnectsExact, restarted)
	c.sale(t, users, leavers)
}

// ticksInOrder returns the tick and opening events in epoch order, and checks they are numbered 1, 2, 3,
// ... with none missing or repeated, and that the sell-out was told.
func ticksInOrder(t *testing.T, evs []event) []event {
	t.Helper()
	var ticks []event
	soldOut := 0
	for _, ev := range evs {
		switch ev.Kind {
		case queue.EventTick, queue.EventOpened:
			ticks = append(ticks, ev)
		case queue.EventSoldOut:
			soldOut++
		}
	}
	slices.SortFunc(ticks, func(a, b event) int { return int(a.Epoch - b.Epoch) })
	for i, ev := range ticks {
		if ev.Epoch != int64(i+1) {
			t.Fatalf("admission events' epochs %v, want 1..%d each once", epochs(ticks), len(ticks))
		}
	}
	if soldOut == 0 {
		t.Error("no sold_out event, want the sell-out told to every instance")
	}
	return ticks
}

// replayed is the line replayed from the admission events.
type replayed struct {
	ticks      []event                   // the tick and opening events, in epoch order
	bySeq      map[int64]*user           // a user by its place in the line
	rankAfter  map[int64]map[int64]int64 // epoch -> seq -> rank
	admittedBy map[string]event          // token -> the event that admitted it
	byTickAt   map[int64][]event
}

// replay replays the line from ticks and checks each event admitted the head of the line, at most a batch,
// with the total it left; that each tick ran once cluster-wide; and that no leaver was admitted.
func replay(t *testing.T, users, leavers []*user, ticks []event, gateAt time.Time) *replayed {
	t.Helper()
	// Replay the line: start with every user in arrival order; each event removes those who left, then admits
	// the first of the line. After each event the rank of a waiting user is its place in what remains.
	r := &replayed{ticks: ticks, bySeq: map[int64]*user{}, rankAfter: map[int64]map[int64]int64{}, admittedBy: map[string]event{},
		byTickAt: map[int64][]event{}}
	byToken := map[string]*user{}
	line := make([]int64, 0, len(users))
	for _, u := range users {
		r.bySeq[u.seq], byToken[u.token] = u, u
		line = append(line, u.seq)
	}
	slices.Sort(line)
	perTickNo := map[int64]int{}
	for _, ev := range ticks {
		for _, s := range ev.Left {
			i := slices.Index(line, s)
			if i < 0 {
				t.Errorf("event %d: seq %d left, but it was not waiting", ev.Epoch, s)
				continue
			}
			line = slices.Delete(line, i, i+1)
		}
		if len(ev.Admitted) > batch {
			t.Errorf("event %d admitted %d, want at most batch_size %d", ev.Epoch, len(ev.Admitted), batch)
		}
		for i, tok := range ev.Admitted {
			u := byToken[tok]
			switch {
			case u == nil:
				t.Errorf("event %d admitted %s, no user's token", ev.Epoch, tok)
			case i >= len(line) || line[i] != u.seq:
				t.Errorf("event %d admitted user %d (seq %d) as number %d, want the head of the line %v", ev.Epoch, u.n, u.seq, i+1, line[:min(len(line), 4)])
			}
			if prev, twice := r.admittedBy[tok]; twice {
				t.Errorf("token %s admitted by events %d and %d, want once", tok, prev.Epoch, ev.Epoch)
			}
			r.admittedBy[tok] = ev
		}
		line = line[min(len(ev.Admitted), len(line)):]
		if int64(len(line)) != ev.Total {
			t.Errorf("event %d: total %d, want %d (the line replayed from the events)", ev.Epoch, ev.Total, len(line))
		}
		ranks := map[int64]int64{}
		for i, s := range line {
			ranks[s] = int64(i + 1)
		}
		r.rankAfter[ev.Epoch] = ranks
		r.byTickAt[ev.TickAtMs] = append(r.byTickAt[ev.TickAtMs], ev)
		// Before anyone could reserve, no slot was freed, so every event was a tick: one per tick number.
		if ev.at.Before(gateAt) && ev.Kind == queue.EventTick {
			perTickNo[ev.TickAtMs/interval.Milliseconds()]++
		}
	}
	for no, n := range perTickNo {
		if n > 1 {
			t.Errorf("tick number %d ran %d times, want once cluster-wide", no, n)
		}
	}
	for _, u := range leavers {
		if _, admitted := r.admittedBy[u.token]; admitted {
			t.Errorf("user %d left but was admitted", u.n)
		}
	}
	return r
}

// pushes is what the sockets were pushed, checked message by message against the replayed line.
//
// Positions: each is a tick's (its tick_at is an event's) with the rank and total of the replayed line, or
// a catch-up right after queued. Per event the ranks pushed across all instances are distinct; while all
// three instances ran, they are exactly 1..total (less the ranks of users leaving at that moment).
type pushes struct {
	*replayed
	passes         *pass.Issuer
	killAt, gateAt time.Time

	pushed                              map[int64]map[int64]*user // epoch -> rank -> user
	passTokens                          map[string]bool
	perExpiry                           map[string]map[string]bool
	reconnectsExact, positionsAfterKill int
}

// user checks every message of each of u's connections.
func (p *pushes) user(t *testing.T, u *user) {
	t.Helper()
	adm, admitted := p.admittedBy[u.token]
	var lastRank int64 = 1 << 62
	for ci, cn := range u.conns {
		p.connection(t, u, ci, cn, &lastRank)
	}
	if admitted && !p.passTokens[u.token] {
		t.Errorf("user %d admitted by event %d but no socket of it got a pass", u.n, adm.Epoch)
	}
	// Admitted before the kill (no socket had moved yet): the pass was pushed to the socket it joined with,
	// whichever instance ran the tick.
	if admitted && adm.at.Before(p.killAt.Add(-interval/4)) {
		if first := u.conns[0]; !slices.ContainsFunc(first.msgs, func(m message) bool { return m.Type == "admitted" }) {
			t.Errorf("user %d (instance %d) admitted by event %d before the kill, but its socket was not pushed the pass", u.n, first.inst, adm.Epoch)
		}
	}
}

// connection checks the messages of u's connection ci in order; lastRank is the rank u was last told, on
// this connection or an earlier one.
func (p *pushes) connection(t *testing.T, u *user, ci int, cn *connection, lastRank *int64) {
	t.Helper()
	lastEpoch, admittedMsgs := int64(0), 0
	for mi, m := range cn.msgs {
		switch m.Type {
		case "prequeue":
			if ci != 0 || mi != 0 || m.Token != u.token || !m.Inserted {
				t.Errorf("user %d connection %d message %d: %+v, want prequeue only first, at its first connection", u.n, ci, mi, m)
			}
		case "queued":
			if mi != 0 || m.Token != u.token || (ci > 0 && m.Inserted) {
				t.Errorf("user %d connection %d message %d: %+v, want queued first, with its token, inserted only at its first", u.n, ci, mi, m)
			}
			if m.Rank > *lastRank {
				t.Errorf("user %d reconnected to instance %d at rank %d, behind its earlier rank %d: it lost its place", u.n, cn.inst, m.Rank, *lastRank)
			}
			*lastRank = m.Rank
		case "position":
			p.position(t, u, ci, mi, cn, m, &lastEpoch, lastRank)
		case "admitted":
			admittedMsgs++
			p.admitted(t, u, m)
		case "seats":
			// Seat changes go to admitted sockets only.
			if admittedMsgs == 0 {
				t.Errorf("user %d connection %d message %d: seats before its admission, want them only once admitted", u.n, ci, mi)
			}
		case "sold_out":
		default:
			t.Errorf("user %d: unexpected message %+v", u.n, m)
		}
	}
	if admittedMsgs > 1 {
		t.Errorf("user %d connection %d got %d admitted messages, want one per admission", u.n, ci, admittedMsgs)
	}
	if cn.reconnect && len(cn.msgs) > 0 && cn.msgs[0].Type == "queued" && cn.epochBefore == cn.epochAfter {
		// No event between dialling and reading ZRANK: the queued rank is the line's at that epoch.
		p.reconnectsExact++
		q := cn.msgs[0]
		if q.Rank != cn.zrank+1 || q.Total != cn.zcard || q.Rank != p.rankAfter[cn.epochBefore][u.seq] {
			t.Errorf("user %d reconnected to instance %d: queued rank %d of %d, want ZRANK+1 = %d of ZCARD %d, rank %d in the replayed line",
				u.n, cn.inst, q.Rank, q.Total, cn.zrank+1, cn.zcard, p.rankAfter[cn.epochBefore][u.seq])
		}
	}
}

// position checks message mi of u's connection ci, a position, against the replayed line; lastEpoch is the
// event of the connection's previous position.
func (p *pushes) position(t *testing.T, u *user, ci, mi int, cn *connection, m message, lastEpoch, lastRank *int64) {
	t.Helper()
	matches := p.byTickAt[m.TickAt]
	if len(matches) == 0 {
		if mi != 1 || (cn.msgs[0].Type != "queued" && cn.msgs[0].Type != "prequeue") {
			t.Errorf("user %d connection %d message %d: position %+v matches no event and does not follow queued", u.n, ci, mi, m)
		}
		*lastRank = m.Rank
		return
	}
	// Two refills may share a millisecond, and a newer position replaces one the socket has not
	// been sent yet: the position is of an event with its tick_at after the connection's
	// previous one, the first whose replayed rank and total it shows (else the first after).
	i := slices.IndexFunc(matches, func(ev event) bool {
		want, waiting := p.rankAfter[ev.Epoch][u.seq]
		return ev.Epoch > *lastEpoch && waiting && m.Rank == want && m.Total == ev.Total
	})
	if i < 0 {
		i = slices.IndexFunc(matches, func(ev event) bool { return ev.Epoch > *lastEpoch })
	}
	if i < 0 {
		t.Errorf("user %d on instance %d: position %+v of event %d after one of event %d: pushed twice, or out of order", u.n, cn.inst, m, matches[len(matches)-1].Epoch, *lastEpoch)
		return
	}
	ev := matches[i]
	want, waiting := p.rankAfter[ev.Epoch][u.seq]
	if !waiting || m.Rank != want || m.Total != ev.Total {
		t.Errorf("user %d on instance %d: position %+v of event %d, want rank %d (waiting: %v) of %d", u.n, cn.inst, m, ev.Epoch, want, waiting, ev.Total)
	}
	*lastEpoch, *lastRank = ev.Epoch, m.Rank
	if p.pushed[ev.Epoch] == nil {
		p.pushed[ev.Epoch] = map[int64]*user{}
	}
	if other := p.pushed[ev.Epoch][m.Rank]; other != nil {
		t.Errorf("event %d: rank %d pushed to users %d and %d", ev.Epoch, m.Rank, other.n, u.n)
	}
	p.pushed[ev.Epoch][m.Rank] = u
	if m.at.After(p.killAt) {
		p.positionsAfterKill++
	}
}

// admitted checks an admitted message of u: its pass verifies, for its own token, until the expiry of the
// event that admitted it.
func (p *pushes) admitted(t *testing.T, u *user, m message) {
	t.Helper()
	adm, admitted := p.admittedBy[u.token]
	cl, err := p.passes.Verify(m.Pass, screening)
	switch {
	case err != nil:
		t.Errorf("user %d: pass does not verify: %v", u.n, err)
	case !admitted:
		t.Errorf("user %d got a pass but no event admitted it", u.n)
	case m.Token != u.token || cl.Token != u.token || cl.ExpiresAt.UnixMilli() != adm.ExpiresAtMs:
		t.Errorf("user %d: admitted %+v (pass for %s until %v), want its token until %d", u.n, m, cl.Token, cl.ExpiresAt, adm.ExpiresAtMs)
	}
	p.passTokens[u.token] = true
	if !admitted || !adm.at.Before(p.gateAt) {
		return // refills (after the gate) may share a millisecond with a tick
	}
	if p.perExpiry[m.ExpiresAt] == nil {
		p.perExpiry[m.ExpiresAt] = map[string]bool{}
	}
	p.perExpiry[m.ExpiresAt][u.token] = true
}

// check holds the pushes together: a pass per admitted token, at most a batch per admission, every waiting
// socket told each tick before the kill, positions after it, and reconnects compared with ZRANK.
func (p *pushes) check(t *testing.T, leavers []*user) {
	t.Helper()
	if len(p.passTokens) != len(p.admittedBy) {
		t.Errorf("%d tokens got a pass, %d were admitted: want the same", len(p.passTokens), len(p.admittedBy))
	}
	for exp, toks := range p.perExpiry {
		if len(toks) > batch {
			t.Errorf("%d tokens admitted until %s (one admission), want at most batch_size %d", len(toks), exp, batch)
		}
	}
	for i, ev := range p.ticks {
		ranks := p.pushed[ev.Epoch]
		// Pushed before the kill, to three live instances: every waiting socket was told. (Not checked for the
		// opening: the first tick follows it in the same millisecond, and its position may replace the
		// opening's before that is written, as a newer position does. Nor for an event the next one followed
		// within the rank interval: the pace sends only the newer line's ranks.)
		if !ev.at.Before(p.killAt.Add(-interval/4)) || ev.Kind == queue.EventOpened {
			continue
		}
		if i+1 < len(p.ticks) && p.ticks[i+1].at.Sub(ev.at) < rankInterval+rankIntervalSlack {
			continue
		}
		for s, rank := range p.rankAfter[ev.Epoch] {
			if ranks[rank] == nil && !slices.Contains(leavers, p.bySeq[s]) {
				t.Errorf("event %d (total %d): no socket was pushed rank %d (user %d)", ev.Epoch, ev.Total, rank, p.bySeq[s].n)
			}
		}
	}
	if p.positionsAfterKill == 0 {
		t.Error("no position was pushed after instance 0 was killed, want the others to go on")
	}
	if p.reconnectsExact == 0 {
		t.Error("no reconnect could be compared with ZRANK (each raced a tick)")
	}
}

// drained checks every socket open on instance 1 when it was told to stop got 1012, and returns how many.
func drained(t *testing.T, users []*user, termAt time.Time) int {
	t.Helper()
	restarted := 0
	for _, u := range users {
		for _, cn := range u.conns {
			if cn.inst != 1 || !cn.closedAt.After(termAt) {
				continue
			}
			if cn.closeCode != hub.CloseServiceRestart {
				t.Errorf("user %d's socket on instance 1 ended with %d %q at the drain, want %d", u.n, cn.closeCode, cn.closeText, hub.CloseServiceRestart)
			}
			restarted++
		}
	}
	if restarted == 0 {
		t.Error("no socket was open on instance 1 when it drained")
	}
	return restarted
}

// sale checks every user reserved once or was told sold out, and no seat was sold twice.
func (c *fleet) sale(t *testing.T, users, leavers []*user) {
	t.Helper()
	ctx := context.Background()
	var sold []string
	outcomes := map[string]int{}
	for _, u := range users {
		outcomes[u.outcome]++
		if u.reserveN > 1 {
			t.Errorf("user %d reserved %d times, want once", u.n, u.reserveN)
		}
		if u.outcome == "reserved" {
			sold = append(sold, u.seats...)
		}
	}
	slices.Sort(sold)
	seats := rows * perRow
	if outcomes["reserved"] != seats || outcomes["left"] != len(leavers) || outcomes["sold_out"] != userCount-seats-len(leavers) {
		t.Errorf("outcomes %v, want %d reserved, %d left, %d sold out", outcomes, seats, len(leavers), userCount-seats-len(leavers))
	}
	if len(slices.Compact(slices.Clone(sold))) != len(sold) {
		t.Errorf("seats sold %v: one sold twice", sold)
	}
	var inSQL []string
	if err := c.env.DB.SelectContext(ctx, &inSQL, `SELECT seat_id FROM reservation_seats WHERE screening_id = $1 ORDER BY seat_id`, screening); err != nil {
		t.Fatal(err)
	}
	slices.Sort(inSQL)
	if !slices.Equal(inSQL, sold) {
		t.Errorf("seats in SQL %v, want the %d reserved %v", inSQL, len(sold), sold)
	}
	if n, err := c.env.Redis.ZCard(ctx, queue.Key(c.env.Prefix, screening, "waiting")).Result(); err != nil || n != 0 {
		t.Errorf("ZCARD waiting after the sell-out = %d, %v; want 0", n, err)
	}
}
