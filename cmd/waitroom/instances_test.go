package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// The settings of the three-instance test: a quick pace, two admitted per tick, so admitting the line takes
// many ticks that any of the instances may run.
const (
	instInterval  = 500 * time.Millisecond
	instBatch     = 2
	instUsers     = 30
	instRows      = 2
	instPerRow    = 10 // 20 seats for 30 users: the sale sells out
	instScreening = "inst"
	// instRegisterWithin is how long after the screening is created its sale opens: every socket is in line
	// by then, so the first ranks are exact and, until an instance dies, every tick reaches every socket.
	instRegisterWithin = 3 * time.Second
	// instUserDeadline bounds each virtual user's whole life.
	instUserDeadline = 50 * time.Second
)

// instSettings are the instances' admission pace and lock timings.
var instSettings = map[string]string{
	"WAITROOM_ADMISSION_INTERVAL":   instInterval.String(),
	"WAITROOM_ADMISSION_BATCH_SIZE": strconv.Itoa(instBatch),
	"WAITROOM_ADMISSION_MAX_ACTIVE": "100",
	"WAITROOM_ADMISSION_ACTIVE_TTL": "2m",
	"WAITROOM_ADMISSION_LOCK_TTL":   "2s", // a killed instance's lock frees soon
	"WAITROOM_BOOKING_LOCK_WAIT":    "1s",
}

// instCluster is the test's three processes and what the virtual users share.
type instCluster struct {
	t      *testing.T
	env    *testenv.Env
	procs  []*apptest.Process
	client *http.Client
	dialer *websocket.Dialer
	passes *queue.Passes
	gate   chan struct{} // closed when admitted users may reserve
	stop   chan struct{} // closed when the test ends: every user gives up

	mu    sync.Mutex
	alive []bool
	next  int // round robin over the live instances
}

// pick returns a live instance other than avoid if there is one, round robin; -1 when none is alive.
func (c *instCluster) pick(avoid int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	fallback := -1
	for range c.procs {
		i := c.next % len(c.procs)
		c.next++
		if !c.alive[i] {
			continue
		}
		if i != avoid {
			return i
		}
		fallback = i
	}
	return fallback
}

func (c *instCluster) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

func (c *instCluster) markDead(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alive[i] = false
}

// instMsg is a server message as one socket received it.
type instMsg struct {
	testenv.Message
	at time.Time
}

func (m instMsg) String() string {
	switch m.Type {
	case "queued":
		return fmt.Sprintf("queued rank %d of %d (inserted %v)", m.Rank, m.Total, m.Inserted)
	case "prequeue":
		return fmt.Sprintf("prequeue of %d (inserted %v)", m.Total, m.Inserted)
	case "position":
		return fmt.Sprintf("position rank %d of %d tick_at %d", m.Rank, m.Total, m.TickAt)
	case "admitted":
		return fmt.Sprintf("admitted %s until %s", m.Token, m.ExpiresAt)
	}
	return fmt.Sprintf("%s %s", m.Type, m.Code)
}

// instConn is one connection of a user, and what it saw.
type instConn struct {
	inst int
	msgs []instMsg
	// How it ended: a close frame's code and text, or 0 (the peer vanished, or the user closed it).
	closeCode int
	closeText string
	closedAt  time.Time
	// For a reconnect: the line's epoch before dialling and after reading the first message, and the token's
	// ZRANK and the line's ZCARD read right after that message (-1 when not waiting).
	reconnect               bool
	epochBefore, epochAfter int64
	zrank, zcard            int64
}

// instUser is one virtual user: a token, its connections, and how it ended.
type instUser struct {
	n     int
	token string
	seq   int64

	mu       sync.Mutex
	conn     *websocket.Conn // the open one
	conns    []*instConn
	pass     string // the first pass received
	passCh   chan struct{}
	doneCh   chan struct{} // closed once outcome is set
	outcome  string        // "reserved", "sold_out" or "left" once it is over
	seats    []string
	reserveN int // 201 answers
	leaving  bool
}

// at says which instance the user's latest connection (one that read its first message) is on.
func (u *instUser) at() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns[len(u.conns)-1].inst
}

func (u *instUser) over() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.outcome
}

func (u *instUser) finish(outcome string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.outcome == "" {
		u.outcome = outcome
		close(u.doneCh)
	}
}

// instEvent is an admission event as the test's own subscription saw it.
type instEvent struct {
	queue.Event
	at time.Time
}

// TestInstancesShareOneLineAcrossKillAndDrain runs three server processes on one Redis and one PostgreSQL,
// with 30 sockets spread over them. Every tick's positions, across the three instances, are exactly the
// ranks 1..total of the line (checked against the line replayed from the admission events); each tick runs
// once cluster-wide and admits at most a batch; every admitted socket gets its own pass whichever instance
// ran the tick. Then one instance is killed (SIGKILL): admission goes on, and its users reconnect elsewhere
// with their token and keep their place (queued rank = ZRANK+1). Another is drained (SIGTERM): its sockets
// are closed with 1012 and it exits 0 within the grace period. In the end every user has reserved or been
// told sold out, and no seat is sold twice.
func TestInstancesShareOneLineAcrossKillAndDrain(t *testing.T) {
	began := time.Now()
	env := testenv.New(t, testenv.Real)
	ctx := context.Background()
	bin := apptest.Build(t)
	t.Logf("built the server in %v", time.Since(began).Round(time.Millisecond))

	c := &instCluster{
		t: t, env: env, gate: make(chan struct{}), stop: make(chan struct{}),
		passes: queue.NewPasses([]byte(apptest.Secret)),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}},
		dialer: &websocket.Dialer{HandshakeTimeout: 3 * time.Second},
	}
	t.Cleanup(c.client.CloseIdleConnections)
	procs := make([]*apptest.Process, 3)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i] = apptest.StartProcess(t, c.client, bin, env, i, instSettings)
		}()
	}
	wg.Wait()
	for i, p := range procs {
		if p == nil {
			t.Fatalf("instance %d did not start", i)
		}
	}
	c.procs, c.alive = procs, []bool{true, true, true}

	events, stopEvents := instObserve(t, env)
	defer stopEvents()

	opens := time.Now().Add(instRegisterWithin).Truncate(time.Millisecond)
	if _, err := booking.NewStore(env.DB).EnsureScreening(ctx, booking.Screening{
		ID: instScreening, Name: "Instances", StartsAt: opens.Add(time.Hour), SaleOpensAt: opens,
	}, booking.Grid(instRows, instPerRow)); err != nil {
		t.Fatal(err)
	}

	// Users join one after the other, round robin over the instances, before the sale opens: they wait in the
	// pre-queue, and take shuffled places in the line when it opens.
	users := make([]*instUser, instUsers)
	waitingKey := queue.Key(env.Prefix, instScreening, "waiting")
	for i := range users {
		u := &instUser{n: i, passCh: make(chan struct{}), doneCh: make(chan struct{})}
		conn, first, err := c.dial(i%3, "")
		if err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
		if first.Type != "prequeue" || !first.Inserted || first.Total != int64(i+1) {
			t.Fatalf("user %d on instance %d: first message %+v, want prequeue, inserted, %d in it", i, i%3, first, i+1)
		}
		u.token, u.conn = first.Token, conn
		u.conns = []*instConn{{inst: i % 3, msgs: []instMsg{first}, zrank: -1, zcard: -1}}
		users[i] = u
	}
	allIn := time.Now()
	if !allIn.Before(opens) {
		t.Fatalf("registering %d users took until %v after the sale opened; raise instRegisterWithin", instUsers, allIn.Sub(opens))
	}
	t.Logf("%d users in the pre-queue, the sale opens in %v", instUsers, opens.Sub(allIn).Round(time.Millisecond))

	var usersDone sync.WaitGroup
	deadline := time.Now().Add(instUserDeadline)
	for _, u := range users {
		usersDone.Add(2)
		go func() {
			defer usersDone.Done()
			c.follow(u, deadline)
		}()
		go func() {
			defer usersDone.Done()
			c.reserve(u, deadline)
		}()
	}
	var stopOnce sync.Once
	stopUsers := func() {
		stopOnce.Do(func() {
			close(c.stop)
			for _, u := range users {
				u.mu.Lock()
				if u.conn != nil {
					u.conn.Close()
				}
				u.mu.Unlock()
			}
			usersDone.Wait()
		})
	}
	t.Cleanup(stopUsers)

	// Phase 1: all three instances tick. Two users from the middle of the line leave after the first tick.
	admittedSoFar := func() int {
		n := 0
		for _, ev := range events.snapshot() {
			n += len(ev.Admitted)
		}
		return n
	}
	instWait(t, 15*time.Second, "the first admission", func() bool { return admittedSoFar() > 0 })
	// The line opened: every user of the pre-queue holds a number now (the shuffle is checked in queue's tests).
	for _, u := range users {
		seq, err := env.Redis.ZScore(ctx, waitingKey, u.token).Result()
		if errors.Is(err, redis.Nil) {
			seq, err = instSeqOfAdmitted(events.snapshot(), u.token)
		}
		if err != nil {
			t.Fatalf("user %d has no place after the opening: %v", u.n, err)
		}
		u.mu.Lock()
		u.seq = int64(seq)
		u.mu.Unlock()
	}
	// Two users from the middle of the shuffled line (places 18 and 23): far from the head, so no tick admits
	// them before their leave arrives.
	var leavers []*instUser
	for _, place := range []int64{18, 23} {
		if i := slices.IndexFunc(users, func(u *instUser) bool { return u.seq == place }); i >= 0 {
			leavers = append(leavers, users[i])
		}
	}
	if len(leavers) != 2 {
		t.Fatalf("no users at places 18 and 23 of the line (admitted already?)")
	}
	for _, u := range leavers {
		u.mu.Lock()
		u.leaving = true
		err := u.conn.WriteJSON(map[string]string{"type": "leave"})
		u.mu.Unlock()
		if err != nil {
			t.Fatalf("user %d leave: %v", u.n, err)
		}
	}
	for _, u := range leavers {
		instWait(t, 5*time.Second, fmt.Sprintf("user %d to leave", u.n), func() bool { return u.over() == "left" })
		if err := env.Redis.ZScore(ctx, waitingKey, u.token).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("user %d left but is still waiting (ZSCORE: %v)", u.n, err)
		}
	}
	instWait(t, 10*time.Second, "8 admissions", func() bool { return admittedSoFar() >= 8 })

	// Between two ticks, count what each instance admitted, then kill instance 0.
	instMidInterval()
	before := len(events.snapshot())
	perInstance := make([]int, 3)
	for i, p := range procs {
		perInstance[i] = apptest.MetricValue(t, c.client, p.URL, "waitroom_admission_admitted_total", instScreening)
	}
	if after := events.snapshot(); len(after) == before {
		sum := perInstance[0] + perInstance[1] + perInstance[2]
		if n := admittedSoFar(); sum != n {
			t.Errorf("the instances' admitted_total add up to %d (%v), want the %d admitted in the events: each admission runs once", sum, perInstance, n)
		}
		t.Logf("admitted per instance before the kill: %v", perInstance)
	}
	killAt := time.Now()
	c.markDead(0)
	if err := procs[0].Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procs[0].Done()
	t.Logf("killed instance 0 at %v", killAt.Sub(began).Round(time.Millisecond))

	// Its users reconnect elsewhere; the other two keep admitting and pushing.
	var orphans []*instUser
	for _, u := range users {
		if u.n%3 == 0 && u.over() == "" {
			orphans = append(orphans, u)
		}
	}
	instWait(t, 10*time.Second, "instance 0's users to reconnect", func() bool {
		for _, u := range orphans {
			if u.over() == "" && u.at() == 0 {
				return false
			}
		}
		return true
	})
	instWait(t, 10*time.Second, "an admission after the kill", func() bool {
		for _, ev := range events.snapshot() {
			if ev.at.After(killAt) && len(ev.Admitted) > 0 {
				return true
			}
		}
		return false
	})

	// Drain instance 1 between two ticks: its sockets are told 1012 and it exits 0 within the grace.
	instMidInterval()
	c.markDead(1)
	termAt := time.Now()
	if err := procs[1].Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-procs[1].Done():
	case <-time.After(app.ShutdownGrace + 5*time.Second):
		t.Fatalf("instance 1 still running %v after SIGTERM; output:\n%s", app.ShutdownGrace+5*time.Second, procs[1].Out.String())
	}
	drained := procs[1].ExitedAt.Sub(termAt)
	t.Logf("instance 1 drained in %v", drained.Round(time.Millisecond))
	if procs[1].WaitErr != nil {
		t.Errorf("instance 1 after SIGTERM: %v, want exit status 0; output:\n%s", procs[1].WaitErr, procs[1].Out.String())
	}
	if drained > app.ShutdownGrace {
		t.Errorf("instance 1 took %v to drain, want at most app.ShutdownGrace %v", drained, app.ShutdownGrace)
	}
	instWait(t, 10*time.Second, "instance 1's users to reconnect", func() bool {
		for _, u := range users {
			if u.over() == "" && u.at() != 2 {
				return false
			}
		}
		return true
	})

	// Phase 2: admitted users reserve, through the last instance, until the sale sells out.
	gateAt := time.Now()
	close(c.gate)
	instWait(t, time.Until(deadline), "every user to reserve or be told sold out", func() bool {
		for _, u := range users {
			if u.over() == "" {
				return false
			}
		}
		return true
	})
	t.Logf("all users done at %v", time.Since(began).Round(time.Millisecond))
	stopUsers()
	stopEvents()

	c.check(t, users, leavers, events.snapshot(), killAt, termAt, gateAt)
	t.Logf("instances test took %v", time.Since(began).Round(time.Millisecond))
}

// check holds the run to its promises; see the test's comment.
func (c *instCluster) check(t *testing.T, users, leavers []*instUser, evs []instEvent, killAt, termAt, gateAt time.Time) {
	t.Helper()
	ctx := context.Background()

	// The events, in epoch order, are numbered 1, 2, 3, ... with none missing or repeated.
	var ticks []instEvent
	soldOut := 0
	for _, ev := range evs {
		switch ev.Kind {
		case queue.EventTick, queue.EventOpened:
			ticks = append(ticks, ev)
		case queue.EventSoldOut:
			soldOut++
		}
	}
	slices.SortFunc(ticks, func(a, b instEvent) int { return int(a.Epoch - b.Epoch) })
	for i, ev := range ticks {
		if ev.Epoch != int64(i+1) {
			t.Fatalf("admission events' epochs %v, want 1..%d each once", instEpochs(ticks), len(ticks))
		}
	}
	if soldOut == 0 {
		t.Error("no sold_out event, want the sell-out told to every instance")
	}

	// Replay the line: start with every user in arrival order; each event removes those who left, then admits
	// the first of the line. After each event the rank of a waiting user is its place in what remains.
	bySeq := map[int64]*instUser{}
	byToken := map[string]*instUser{}
	line := make([]int64, 0, len(users))
	for _, u := range users {
		bySeq[u.seq], byToken[u.token] = u, u
		line = append(line, u.seq)
	}
	slices.Sort(line)
	rankAfter := map[int64]map[int64]int64{} // epoch -> seq -> rank
	admittedBy := map[string]instEvent{}     // token -> the event that admitted it
	byTickAt := map[int64][]instEvent{}
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
		if len(ev.Admitted) > instBatch {
			t.Errorf("event %d admitted %d, want at most batch_size %d", ev.Epoch, len(ev.Admitted), instBatch)
		}
		for i, tok := range ev.Admitted {
			u := byToken[tok]
			switch {
			case u == nil:
				t.Errorf("event %d admitted %s, no user's token", ev.Epoch, tok)
			case i >= len(line) || line[i] != u.seq:
				t.Errorf("event %d admitted user %d (seq %d) as number %d, want the head of the line %v", ev.Epoch, u.n, u.seq, i+1, line[:min(len(line), 4)])
			}
			if prev, twice := admittedBy[tok]; twice {
				t.Errorf("token %s admitted by events %d and %d, want once", tok, prev.Epoch, ev.Epoch)
			}
			admittedBy[tok] = ev
		}
		line = line[min(len(ev.Admitted), len(line)):]
		if int64(len(line)) != ev.Total {
			t.Errorf("event %d: total %d, want %d (the line replayed from the events)", ev.Epoch, ev.Total, len(line))
		}
		ranks := map[int64]int64{}
		for i, s := range line {
			ranks[s] = int64(i + 1)
		}
		rankAfter[ev.Epoch] = ranks
		byTickAt[ev.TickAtMs] = append(byTickAt[ev.TickAtMs], ev)
		// Before anyone could reserve, no slot was freed, so every event was a tick: one per tick number.
		if ev.at.Before(gateAt) && ev.Kind == queue.EventTick {
			perTickNo[ev.TickAtMs/instInterval.Milliseconds()]++
		}
	}
	for no, n := range perTickNo {
		if n > 1 {
			t.Errorf("tick number %d ran %d times, want once cluster-wide", no, n)
		}
	}
	for _, u := range leavers {
		if _, admitted := admittedBy[u.token]; admitted {
			t.Errorf("user %d left but was admitted", u.n)
		}
	}

	// Positions: each is a tick's (its tick_at is an event's) with the rank and total of the replayed line, or
	// a catch-up right after queued. Per event the ranks pushed across all instances are distinct; while all
	// three instances ran, they are exactly 1..total (less the ranks of users leaving at that moment).
	pushed := map[int64]map[int64]*instUser{} // epoch -> rank -> user
	passTokens := map[string]bool{}
	perExpiry := map[string]map[string]bool{}
	reconnectsExact, positionsAfterKill := 0, 0
	for _, u := range users {
		adm, admitted := admittedBy[u.token]
		var lastRank int64 = 1 << 62
		for ci, cn := range u.conns {
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
					if m.Rank > lastRank {
						t.Errorf("user %d reconnected to instance %d at rank %d, behind its earlier rank %d: it lost its place", u.n, cn.inst, m.Rank, lastRank)
					}
					lastRank = m.Rank
				case "position":
					matches := byTickAt[m.TickAt]
					if len(matches) == 0 {
						if mi != 1 || (cn.msgs[0].Type != "queued" && cn.msgs[0].Type != "prequeue") {
							t.Errorf("user %d connection %d message %d: position %+v matches no event and does not follow queued", u.n, ci, mi, m)
						}
						lastRank = m.Rank
						continue
					}
					// Two refills may share a millisecond, and a newer position replaces one the socket has not
					// been sent yet: the position is of an event with its tick_at after the connection's
					// previous one, the first whose replayed rank and total it shows (else the first after).
					i := slices.IndexFunc(matches, func(ev instEvent) bool {
						want, waiting := rankAfter[ev.Epoch][u.seq]
						return ev.Epoch > lastEpoch && waiting && m.Rank == want && m.Total == ev.Total
					})
					if i < 0 {
						i = slices.IndexFunc(matches, func(ev instEvent) bool { return ev.Epoch > lastEpoch })
					}
					if i < 0 {
						t.Errorf("user %d on instance %d: position %+v of event %d after one of event %d: pushed twice, or out of order", u.n, cn.inst, m, matches[len(matches)-1].Epoch, lastEpoch)
						continue
					}
					ev := matches[i]
					want, waiting := rankAfter[ev.Epoch][u.seq]
					if !waiting || m.Rank != want || m.Total != ev.Total {
						t.Errorf("user %d on instance %d: position %+v of event %d, want rank %d (waiting: %v) of %d", u.n, cn.inst, m, ev.Epoch, want, waiting, ev.Total)
					}
					lastEpoch, lastRank = ev.Epoch, m.Rank
					if pushed[ev.Epoch] == nil {
						pushed[ev.Epoch] = map[int64]*instUser{}
					}
					if other := pushed[ev.Epoch][m.Rank]; other != nil {
						t.Errorf("event %d: rank %d pushed to users %d and %d", ev.Epoch, m.Rank, other.n, u.n)
					}
					pushed[ev.Epoch][m.Rank] = u
					if m.at.After(killAt) {
						positionsAfterKill++
					}
				case "admitted":
					admittedMsgs++
					cl, err := c.passes.Verify(m.Pass, instScreening)
					switch {
					case err != nil:
						t.Errorf("user %d: pass does not verify: %v", u.n, err)
					case !admitted:
						t.Errorf("user %d got a pass but no event admitted it", u.n)
					case m.Token != u.token || cl.Token != u.token || cl.ExpiresAt.UnixMilli() != adm.ExpiresAtMs:
						t.Errorf("user %d: admitted %+v (pass for %s until %v), want its token until %d", u.n, m, cl.Token, cl.ExpiresAt, adm.ExpiresAtMs)
					}
					passTokens[u.token] = true
					if !admitted || !adm.at.Before(gateAt) {
						continue // refills (after the gate) may share a millisecond with a tick
					}
					if perExpiry[m.ExpiresAt] == nil {
						perExpiry[m.ExpiresAt] = map[string]bool{}
					}
					perExpiry[m.ExpiresAt][u.token] = true
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
				reconnectsExact++
				q := cn.msgs[0]
				if q.Rank != cn.zrank+1 || q.Total != cn.zcard || q.Rank != rankAfter[cn.epochBefore][u.seq] {
					t.Errorf("user %d reconnected to instance %d: queued rank %d of %d, want ZRANK+1 = %d of ZCARD %d, rank %d in the replayed line",
						u.n, cn.inst, q.Rank, q.Total, cn.zrank+1, cn.zcard, rankAfter[cn.epochBefore][u.seq])
				}
			}
		}
		if admitted && !passTokens[u.token] {
			t.Errorf("user %d admitted by event %d but no socket of it got a pass", u.n, adm.Epoch)
		}
		// Admitted before the kill (no socket had moved yet): the pass was pushed to the socket it joined with,
		// whichever instance ran the tick.
		if admitted && adm.at.Before(killAt.Add(-instInterval/4)) {
			if first := u.conns[0]; !slices.ContainsFunc(first.msgs, func(m instMsg) bool { return m.Type == "admitted" }) {
				t.Errorf("user %d (instance %d) admitted by event %d before the kill, but its socket was not pushed the pass", u.n, first.inst, adm.Epoch)
			}
		}
	}
	if len(passTokens) != len(admittedBy) {
		t.Errorf("%d tokens got a pass, %d were admitted: want the same", len(passTokens), len(admittedBy))
	}
	for exp, toks := range perExpiry {
		if len(toks) > instBatch {
			t.Errorf("%d tokens admitted until %s (one admission), want at most batch_size %d", len(toks), exp, instBatch)
		}
	}
	for _, ev := range ticks {
		ranks := pushed[ev.Epoch]
		// Pushed before the kill, to three live instances: every waiting socket was told. (Not checked for the
		// opening: the first tick follows it in the same millisecond, and its position may replace the
		// opening's before that is written, as a newer position does.)
		if !ev.at.Before(killAt.Add(-instInterval/4)) || ev.Kind == queue.EventOpened {
			continue
		}
		for s, rank := range rankAfter[ev.Epoch] {
			if ranks[rank] == nil && !slices.Contains(leavers, bySeq[s]) {
				t.Errorf("event %d (total %d): no socket was pushed rank %d (user %d)", ev.Epoch, ev.Total, rank, bySeq[s].n)
			}
		}
	}
	if positionsAfterKill == 0 {
		t.Error("no position was pushed after instance 0 was killed, want the others to go on")
	}
	if reconnectsExact == 0 {
		t.Error("no reconnect could be compared with ZRANK (each raced a tick)")
	}

	// The drain: every socket open on instance 1 when it was told to stop got 1012.
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

	t.Logf("%d events, %d admitted, %d positions after the kill, %d reconnects checked against ZRANK, %d sockets closed by the drain",
		len(ticks), len(admittedBy), positionsAfterKill, reconnectsExact, restarted)

	// The sale: every user reserved once or was told sold out; no seat was sold twice.
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
	seats := instRows * instPerRow
	if outcomes["reserved"] != seats || outcomes["left"] != len(leavers) || outcomes["sold_out"] != instUsers-seats-len(leavers) {
		t.Errorf("outcomes %v, want %d reserved, %d left, %d sold out", outcomes, seats, len(leavers), instUsers-seats-len(leavers))
	}
	if len(slices.Compact(slices.Clone(sold))) != len(sold) {
		t.Errorf("seats sold %v: one sold twice", sold)
	}
	var inSQL []string
	if err := c.env.DB.SelectContext(ctx, &inSQL, `SELECT seat_id FROM reservation_seats WHERE screening_id = $1 ORDER BY seat_id`, instScreening); err != nil {
		t.Fatal(err)
	}
	slices.Sort(inSQL)
	if !slices.Equal(inSQL, sold) {
		t.Errorf("seats in SQL %v, want the %d reserved %v", inSQL, len(sold), sold)
	}
	if n, err := c.env.Redis.ZCard(ctx, queue.Key(c.env.Prefix, instScreening, "waiting")).Result(); err != nil || n != 0 {
		t.Errorf("ZCARD waiting after the sell-out = %d, %v; want 0", n, err)
	}
}

// follow reads the user's sockets until it is over, reconnecting with its token (to a live instance) when
// a socket drops for any reason but its own end.
func (c *instCluster) follow(u *instUser, deadline time.Time) {
	t := c.t
	u.mu.Lock()
	conn, cn := u.conn, u.conns[0]
	u.mu.Unlock()
	for {
		c.read(u, conn, cn, deadline)
		if u.over() != "" || c.stopped() {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("user %d: not done by its deadline", u.n)
			return
		}
		// Reconnect after a short random pause (docs/protocol.md: 0–2 s after 1012; shorter here).
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
		for {
			if time.Now().After(deadline) || u.over() != "" || c.stopped() {
				return
			}
			i := c.pick(cn.inst)
			if i < 0 {
				t.Errorf("user %d: no live instance to reconnect to", u.n)
				return
			}
			next := &instConn{inst: i, reconnect: true, zrank: -1, zcard: -1}
			next.epochBefore = c.epoch()
			var first instMsg
			var err error
			conn, first, err = c.dial(i, u.token)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue // the instance went away meanwhile
			}
			next.msgs = []instMsg{first}
			if first.Type == "queued" {
				ctx := context.Background()
				key := queue.Key(c.env.Prefix, instScreening, "waiting")
				if r, err := c.env.Redis.ZRank(ctx, key, u.token).Result(); err == nil {
					next.zrank = r
				}
				next.zcard = c.env.Redis.ZCard(ctx, key).Val()
			}
			next.epochAfter = c.epoch()
			u.mu.Lock()
			u.conn, cn = conn, next
			u.conns = append(u.conns, next)
			u.mu.Unlock()
			c.note(u, first)
			break
		}
	}
}

// read records every message of one connection until it ends.
func (c *instCluster) read(u *instUser, conn *websocket.Conn, cn *instConn, deadline time.Time) {
	for {
		_ = conn.SetReadDeadline(deadline)
		var m instMsg
		err := conn.ReadJSON(&m)
		now := time.Now()
		if err != nil {
			u.mu.Lock()
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				cn.closeCode, cn.closeText = ce.Code, ce.Text
			}
			cn.closedAt = now
			leaving := u.leaving
			u.mu.Unlock()
			conn.Close()
			switch {
			case cn.closeCode == websocket.CloseNormalClosure && cn.closeText == "left" && leaving:
				u.finish("left")
			case cn.closeCode == websocket.CloseNormalClosure && cn.closeText == "sold out":
				u.finish("sold_out")
			}
			return
		}
		m.at = now
		u.mu.Lock()
		cn.msgs = append(cn.msgs, m)
		u.mu.Unlock()
		c.note(u, m)
	}
}

// note acts on a message: a pass lets the user reserve, sold_out ends it.
func (c *instCluster) note(u *instUser, m instMsg) {
	switch m.Type {
	case "admitted":
		u.mu.Lock()
		if u.pass == "" {
			u.pass = m.Pass
			close(u.passCh)
		}
		u.mu.Unlock()
	case "sold_out":
		u.finish("sold_out")
	}
}

// reserve waits for the user's pass and the gate, then reserves one seat through a live instance: the seats
// in order from one of its own, the next one when a seat is taken. One Idempotency-Key per user makes a retry
// after a lost answer safe.
func (c *instCluster) reserve(u *instUser, deadline time.Time) {
	t := c.t
	for _, wait := range []chan struct{}{u.passCh, c.gate} {
		select {
		case <-wait:
		case <-u.doneCh:
			return
		case <-c.stop:
			return
		}
	}
	u.mu.Lock()
	pass := u.pass
	u.mu.Unlock()
	seats := instSeatIDs()
	at := u.n % len(seats)
	for time.Now().Before(deadline) {
		if u.over() != "" || c.stopped() {
			return // told sold out on its socket, or the test is over
		}
		i := c.pick(-1)
		if i < 0 {
			t.Errorf("user %d: no live instance to reserve through", u.n)
			return
		}
		seat := seats[at%len(seats)]
		code, body, err := c.post(c.procs[i].URL, pass, u.token, seat)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		switch e := apptest.ErrorCode(body); {
		case code == http.StatusCreated:
			u.mu.Lock()
			u.reserveN++
			u.seats = nil
			list, _ := body["seats"].([]any)
			for _, s := range list {
				seat, _ := s.(string)
				u.seats = append(u.seats, seat)
			}
			// It may have taken the last seat: then its socket may be told sold out before this answer is read.
			if u.outcome == "" {
				close(u.doneCh)
			}
			u.outcome = "reserved"
			// After 201 the client closes its socket and forgets the token.
			if u.conn != nil {
				u.conn.Close()
			}
			u.mu.Unlock()
			return
		case code == http.StatusConflict && e == "SOLD_OUT":
			u.finish("sold_out")
			return
		case code == http.StatusConflict && e == "SEAT_TAKEN":
			at++
		case code == http.StatusConflict && (e == "SEAT_LOCKED" || e == "LOCK_EXPIRED"), code >= 500:
			time.Sleep(20 * time.Millisecond)
		default:
			t.Errorf("user %d reserve %s through instance %d: %d %v", u.n, seat, i, code, body)
			return
		}
	}
	t.Errorf("user %d: no seat by its deadline", u.n)
}

func (c *instCluster) post(baseURL, pass, key, seat string) (int, map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"seats": []string{seat}})
	req, err := http.NewRequest(http.MethodPost, baseURL+"/api/screenings/"+instScreening+"/reservations", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+pass)
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, out, nil
}

// dial opens a socket to instance i with token and reads its first message.
func (c *instCluster) dial(i int, token string) (*websocket.Conn, instMsg, error) {
	u := strings.Replace(c.procs[i].URL, "http://", "ws://", 1) + "/ws/screenings/" + instScreening
	if token != "" {
		u += "?token=" + token
	}
	conn, resp, err := c.dialer.Dial(u, nil)
	if err != nil {
		return nil, instMsg{}, err
	}
	resp.Body.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var m instMsg
	if err := conn.ReadJSON(&m); err != nil {
		conn.Close()
		return nil, instMsg{}, err
	}
	m.at = time.Now()
	return conn, m, nil
}

// epoch is the number of the line's last admission event.
func (c *instCluster) epoch() int64 {
	n, err := c.env.Redis.Get(context.Background(), queue.Key(c.env.Prefix, instScreening, "epoch")).Int64()
	if err != nil {
		return 0
	}
	return n
}

func instSeatIDs() []string {
	var ids []string
	for _, s := range booking.Grid(instRows, instPerRow) {
		ids = append(ids, s.ID)
	}
	return ids
}

// instEvents is what the test's subscription to the screening's events received.
type instEvents struct {
	mu  sync.Mutex
	evs []instEvent
}

func (e *instEvents) snapshot() []instEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.evs)
}

// instObserve subscribes to the screening's admission events the way the instances do (sharded pub/sub on
// Redis 7, classic otherwise: both are followed), so the test knows every event's epoch, tick time, admitted
// tokens and line.
func instObserve(t *testing.T, env *testenv.Env) (*instEvents, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	channel := queue.Key(env.Prefix, instScreening, "events")
	subs := []*redis.PubSub{env.Redis.SSubscribe(ctx, channel), env.Redis.Subscribe(ctx, channel)}
	for _, ps := range subs {
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatalf("subscribe %s: %v", channel, err)
		}
	}
	e := &instEvents{}
	var wg sync.WaitGroup
	for _, ps := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range ps.Channel() {
				if m.Payload == "" {
					continue // the instances' probe of the pub/sub mode
				}
				var ev queue.Event
				if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
					t.Errorf("event %q: %v", m.Payload, err)
					continue
				}
				e.mu.Lock()
				e.evs = append(e.evs, instEvent{Event: ev, at: time.Now()})
				e.mu.Unlock()
			}
		}()
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			for _, ps := range subs {
				ps.Close()
			}
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return e, stop
}

// instMidInterval sleeps until halfway between two ticks, so what follows does not race one.
func instMidInterval() {
	now := time.Now()
	mid := now.Truncate(instInterval).Add(instInterval / 2)
	if mid.Before(now) {
		mid = mid.Add(instInterval)
	}
	time.Sleep(time.Until(mid))
}

// instWait polls cond until it holds, failing the test after timeout.
func instWait(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func instEpochs(evs []instEvent) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Epoch
	}
	return out
}

// instSeqOfAdmitted is the sequence number of a token admitted before anyone left: admission takes the
// numbers after the head in order, so the i-th admitted of an event holds head − #admitted + 1 + i.
func instSeqOfAdmitted(evs []instEvent, token string) (float64, error) {
	for _, ev := range evs {
		if i := slices.Index(ev.Admitted, token); i >= 0 {
			return float64(ev.Head - int64(len(ev.Admitted)) + 1 + int64(i)), nil
		}
	}
	return 0, fmt.Errorf("token %s neither waiting nor admitted by an event", token)
}
