// Three instances share one line across a kill and a drain; the test's settings and its story.

package instances

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The settings of the three-instance test: a quick pace, two admitted per tick, so admitting the line takes
// many ticks that any of the instances may run.
const (
	interval  = 500 * time.Millisecond
	batch     = 2
	userCount = 30
	rows      = 2
	perRow    = 10 // 20 seats for 30 users: the sale sells out
	screening = "inst"
	// registerWithin is how long after the screening is created its sale opens: every socket is in line
	// by then, so the first ranks are exact and, until an instance dies, every tick reaches every socket.
	registerWithin = 3 * time.Second
	// userDeadline bounds each virtual user's whole life.
	userDeadline = 50 * time.Second
)

// settings are the instances' admission pace and lock timings.
var settings = map[string]string{
	"WAITROOM_ADMISSION_INTERVAL":   interval.String(),
	"WAITROOM_ADMISSION_BATCH_SIZE": strconv.Itoa(batch),
	"WAITROOM_ADMISSION_MAX_ACTIVE": "100",
	"WAITROOM_ADMISSION_ACTIVE_TTL": "2m",
	"WAITROOM_ADMISSION_LOCK_TTL":   "2s", // a killed instance's lock frees soon
	"WAITROOM_BOOKING_LOCK_WAIT":    "1s",
	"WAITROOM_HUB_RANK_INTERVAL":    rankInterval.String(),
}

// rankInterval is the instances' hub.rank_interval: an event the next one follows within it may send no
// ranks of its own (the pace sends the newer line's); rankIntervalSlack allows for the test hearing the
// events at other moments than the instances do.
const (
	rankInterval      = 250 * time.Millisecond
	rankIntervalSlack = 100 * time.Millisecond
)

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

	c := &fleet{
		t: t, env: env, gate: make(chan struct{}), stop: make(chan struct{}),
		passes: pass.NewSecretIssuer([]byte(apptest.Secret)),
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
			procs[i] = apptest.StartProcess(t, c.client, bin, env, i, settings)
		}()
	}
	wg.Wait()
	for i, p := range procs {
		if p == nil {
			t.Fatalf("instance %d did not start", i)
		}
	}
	c.procs, c.alive = procs, []bool{true, true, true}

	events, stopEvents := observe(t, env)
	defer stopEvents()

	opens := time.Now().Add(registerWithin).Truncate(time.Millisecond)
	if _, err := booking.NewStore(env.DB).EnsureScreening(ctx, booking.Screening{
		ID: screening, Name: "Instances", StartsAt: opens.Add(time.Hour), SaleOpensAt: opens,
	}, booking.Grid(rows, perRow)); err != nil {
		t.Fatal(err)
	}

	// Users join one after the other, round robin over the instances, before the sale opens: they wait in the
	// pre-queue, and take shuffled places in the line when it opens.
	users := make([]*user, userCount)
	waitingKey := queue.Key(env.Prefix, screening, "waiting")
	for i := range users {
		u := &user{n: i, passCh: make(chan struct{}), doneCh: make(chan struct{})}
		conn, first, err := c.dial(i%3, "")
		if err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
		if first.Type != "prequeue" || !first.Inserted || first.Total != int64(i+1) {
			t.Fatalf("user %d on instance %d: first message %+v, want prequeue, inserted, %d in it", i, i%3, first, i+1)
		}
		u.token, u.conn = first.Token, conn
		u.conns = []*connection{{inst: i % 3, msgs: []message{first}, zrank: -1, zcard: -1}}
		users[i] = u
	}
	allIn := time.Now()
	if !allIn.Before(opens) {
		t.Fatalf("registering %d users took until %v after the sale opened; raise registerWithin", userCount, allIn.Sub(opens))
	}
	t.Logf("%d users in the pre-queue, the sale opens in %v", userCount, opens.Sub(allIn).Round(time.Millisecond))

	var usersDone sync.WaitGroup
	deadline := time.Now().Add(userDeadline)
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
	testenv.WaitFor(t, 15*time.Second, "the first admission", func() bool { return admittedSoFar() > 0 })
	// The line opened: every user of the pre-queue holds a number now (the shuffle is checked in queue's tests).
	for _, u := range users {
		seq, err := env.Redis.ZScore(ctx, waitingKey, u.token).Result()
		if errors.Is(err, redis.Nil) {
			seq, err = seqOfAdmitted(events.snapshot(), u.token)
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
	var leavers []*user
	for _, place := range []int64{18, 23} {
		if i := slices.IndexFunc(users, func(u *user) bool { return u.seq == place }); i >= 0 {
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
		testenv.WaitFor(t, 5*time.Second, fmt.Sprintf("user %d to leave", u.n), func() bool { return u.over() == "left" })
		if err := env.Redis.ZScore(ctx, waitingKey, u.token).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("user %d left but is still waiting (ZSCORE: %v)", u.n, err)
		}
	}
	testenv.WaitFor(t, 10*time.Second, "8 admissions", func() bool { return admittedSoFar() >= 8 })

	// Between two ticks, count what each instance admitted, then kill instance 0.
	midInterval()
	before := len(events.snapshot())
	perInstance := make([]int, 3)
	for i, p := range procs {
		perInstance[i] = apptest.MetricValue(t, c.client, p.OpsURL, "waitroom_admission_admitted_total", screening)
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
	var orphans []*user
	for _, u := range users {
		if u.n%3 == 0 && u.over() == "" {
			orphans = append(orphans, u)
		}
	}
	testenv.WaitFor(t, 10*time.Second, "instance 0's users to reconnect", func() bool {
		for _, u := range orphans {
			if u.over() == "" && u.at() == 0 {
				return false
			}
		}
		return true
	})
	testenv.WaitFor(t, 10*time.Second, "an admission after the kill", func() bool {
		for _, ev := range events.snapshot() {
			if ev.at.After(killAt) && len(ev.Admitted) > 0 {
				return true
			}
		}
		return false
	})

	// Drain instance 1 between two ticks: its sockets are told 1012 and it exits 0 within the grace.
	midInterval()
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
	testenv.WaitFor(t, 10*time.Second, "instance 1's users to reconnect", func() bool {
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
	testenv.WaitFor(t, time.Until(deadline), "every user to reserve or be told sold out", func() bool {
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
