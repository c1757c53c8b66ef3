//go:build faults

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// The randomized fault run (make test-faults): three server processes share a Redis and a PostgreSQL, each
// behind a fault proxy; users queue, are admitted and reserve while a seeded random schedule resets and cuts
// both stores, restarts Redis empty once, kills one instance (SIGKILL) and pauses others (SIGSTOP) past
// their seat locks' lease. Afterwards the history is checked against the guarantees of
// docs/reliability.md: no seat sold twice (1); every user who got a place ends with a ticket or sold out,
// nobody lost (2); admissions in queue order, never more than batch_size at once nor max_active at a time
// (3).
const (
	rndUsers     = 60
	rndSeats     = 40 // fewer than users: the last ones end sold out
	rndBatch     = 2
	rndMaxActive = 4
	rndInterval  = 400 * time.Millisecond
	rndTTL       = 20 * time.Second
	rndFaultsFor = 12 * time.Second
	rndDeadline  = 90 * time.Second
)

// rndUser is one virtual user and its history.
type rndUser struct {
	n        int
	token    string
	ackedAt  time.Time // its first queued/prequeue arrived
	dialedAt time.Time
	// admissions are the expiries (Unix ms) of the admissions it was told of, in order.
	admissions []int64
	requeued   bool // its admission lapsed or was refused, and it queued again
	ticket     string
	soldOut    bool
	err        string
}

func TestRandomFaultScheduleKeepsTheGuarantees(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := testenvSeed(); s != 0 {
		seed = s
	}
	t.Logf("fault schedule seed %d (rerun with WAITROOM_FAULT_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))

	rs := testenv.StartRedis(t)
	env := testenv.Standalone(t, rs.Addr)
	rp := testenv.NewProxy(t, rs.Addr)
	pgURL, err := url.Parse(env.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	pp := testenv.NewProxy(t, pgURL.Host)
	pgURL.Host = pp.Addr()
	viaProxies := *env
	viaProxies.RedisAddr, viaProxies.DatabaseURL = rp.Addr(), pgURL.String()
	env.Demo(t, "rnd", 4, rndSeats/4)
	settings := map[string]string{
		"WAITROOM_ADMISSION_INTERVAL":   rndInterval.String(),
		"WAITROOM_ADMISSION_BATCH_SIZE": strconv.Itoa(rndBatch),
		"WAITROOM_ADMISSION_MAX_ACTIVE": strconv.Itoa(rndMaxActive),
		"WAITROOM_ADMISSION_ACTIVE_TTL": rndTTL.String(),
		"WAITROOM_DEMO_ENABLED":         "false",
		"WAITROOM_LOG_LEVEL":            "error",
		"WAITROOM_ADMISSION_LOCK_TTL":   "1s", // a killed or paused instance's tick lock frees soon
		"WAITROOM_BOOKING_LOCK_LEASE":   "1s", // so a pause outlasts a seat lock held
		"WAITROOM_BOOKING_LOCK_WAIT":    "500ms",
	}
	// Three server processes, so one can be killed (SIGKILL) and another paused (SIGSTOP) past its seat locks'
	// lease while the third serves.
	bin := apptest.Build(t)
	client := &http.Client{Timeout: 5 * time.Second}
	procs := make([]*apptest.Process, 3)
	servers := make([]*apptest.Server, len(procs))
	for i := range procs {
		if procs[i] = apptest.StartProcess(t, client, bin, &viaProxies, i, settings); procs[i] == nil {
			t.Fatalf("instance %d did not start", i)
		}
		servers[i] = &apptest.Server{URL: procs[i].URL, Out: procs[i].Out}
	}
	events := rndObserve(t, env)

	// Guarantee 3, max_active: sample the active set straight from Redis (not through the proxy).
	stopSampling := make(chan struct{})
	var maxSeen int64
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		activeKey := queue.Key(env.Prefix, "rnd", "active")
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(5 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			n, err := env.Redis.ZCount(ctx, activeKey, "("+strconv.FormatInt(time.Now().UnixMilli(), 10), "+inf").Result()
			cancel()
			if err == nil && n > maxSeen {
				maxSeen = n
			}
		}
	}()

	users := make([]*rndUser, rndUsers)
	var wg sync.WaitGroup
	deadline := time.Now().Add(rndDeadline)
	for i := range users {
		u := &rndUser{n: i}
		users[i] = u
		// One after the other: user i's place was acknowledged before user i+1 dialled (queue order).
		acked := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			rndRun(t, servers, u, acked, deadline)
		}()
		select {
		case <-acked:
		case <-time.After(20 * time.Second):
			t.Fatalf("user %d got no place within 20s", i)
		}
	}

	// The schedule: one fault at a time, each followed by a healthy moment; at a random moment Redis
	// restarts empty once, and at another one instance is killed.
	began := time.Now()
	faultsEnd := began.Add(rndFaultsFor)
	restartAt := began.Add(time.Duration(1000+rng.IntN(7000)) * time.Millisecond)
	killAt := began.Add(time.Duration(1000+rng.IntN(7000)) * time.Millisecond)
	restarted, killed := false, false
	for time.Now().Before(faultsEnd) {
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		hold := time.Duration(300+rng.IntN(1500)) * time.Millisecond
		switch k := rng.IntN(5); {
		case !restarted && time.Now().After(restartAt):
			restarted = true
			t.Logf("fault: restart Redis empty (down %v)", hold)
			rs.Kill()
			time.Sleep(hold)
			rs.Start()
		case !killed && time.Now().After(killAt):
			killed = true
			t.Logf("fault: SIGKILL instance 2")
			_ = procs[2].Cmd.Process.Kill()
		case k == 0:
			t.Logf("fault: reset Redis connections")
			rp.Reset()
		case k == 1:
			t.Logf("fault: cut Redis for %v", hold)
			rp.Cut()
			time.Sleep(hold)
			rp.Restore()
		case k == 2:
			t.Logf("fault: reset PostgreSQL connections")
			pp.Reset()
		case k == 3:
			t.Logf("fault: cut PostgreSQL for %v", hold)
			pp.Cut()
			time.Sleep(hold)
			pp.Restore()
		case k == 4:
			p := procs[rng.IntN(2)] // 0 or 1: never the one to be killed
			t.Logf("fault: pause instance %d for %v (past the 1 s seat-lock lease)", p.N, hold+time.Second)
			_ = p.Cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(hold + time.Second)
			_ = p.Cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	t.Logf("faults over; waiting for every user")
	wg.Wait()
	close(stopSampling)
	sampling.Wait()

	rndCheck(t, env, users, maxSeen, events)
}

// rndEvents are the admission events the test heard, straight from Redis (those published while Redis was
// unreachable were heard by nobody).
type rndEvents struct {
	mu  sync.Mutex
	evs []queue.Event
}

// rndObserve follows the screening's events on both kinds of pub/sub (the servers use sharded pub/sub on
// Redis 7); go-redis subscribes again after the restart.
func rndObserve(t *testing.T, env *testenv.Env) *rndEvents {
	t.Helper()
	channel := queue.Key(env.Prefix, "rnd", "events")
	e := &rndEvents{}
	var wg sync.WaitGroup
	subs := []*redis.PubSub{env.Redis.SSubscribe(context.Background(), channel), env.Redis.Subscribe(context.Background(), channel)}
	t.Cleanup(func() {
		for _, ps := range subs {
			ps.Close()
		}
		wg.Wait()
	})
	for _, ps := range subs {
		if _, err := ps.Receive(context.Background()); err != nil {
			t.Fatalf("subscribe %s: %v", channel, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range ps.Channel() {
				var ev queue.Event
				if m.Payload == "" || json.Unmarshal([]byte(m.Payload), &ev) != nil {
					continue
				}
				e.mu.Lock()
				e.evs = append(e.evs, ev)
				e.mu.Unlock()
			}
		}()
	}
	return e
}

// rndRun is one user: hold a socket (reconnecting with the token when it drops), reserve when admitted
// (retrying a 503, another seat on a 409), queue again when the admission lapsed, until a ticket or sold
// out.
func rndRun(t *testing.T, servers []*apptest.Server, u *rndUser, acked chan struct{}, deadline time.Time) {
	seatRng := rand.New(rand.NewPCG(uint64(u.n), 7))
	ackOnce := sync.OnceFunc(func() { close(acked) })
	defer ackOnce() // a user that failed before its place lets the next one go (and the check reports it)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		at := (u.n + attempt) % len(servers)
		srv := servers[at]
		wsURL := strings.Replace(srv.URL, "http://", "ws://", 1) + "/ws/screenings/rnd"
		if u.token != "" {
			wsURL += "?token=" + u.token
		}
		if u.dialedAt.IsZero() {
			u.dialedAt = time.Now()
		}
		conn, resp, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial(wsURL, nil)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		resp.Body.Close()
		done := rndSocket(conn, servers, at, u, ackOnce, seatRng, deadline)
		conn.Close()
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	u.err = "deadline"
}

// rndSocket serves one connection, to servers[at]; it reports whether the user is done.
func rndSocket(conn *websocket.Conn, servers []*apptest.Server, at int, u *rndUser, ack func(), rng *rand.Rand, deadline time.Time) bool {
	for time.Now().Before(deadline) {
		_ = conn.SetReadDeadline(deadline)
		var m testenv.Message
		if err := conn.ReadJSON(&m); err != nil {
			return false // dropped: reconnect with the token
		}
		switch m.Type {
		case "queued", "prequeue":
			if u.token == "" {
				u.token, u.ackedAt = m.Token, time.Now()
			}
			ack()
		case "sold_out":
			u.soldOut = true
			return true
		case "admitted":
			exp, err := time.Parse(time.RFC3339Nano, m.ExpiresAt)
			if err != nil {
				u.err = "bad expires_at " + m.ExpiresAt
				return true
			}
			if len(u.admissions) > 0 && u.admissions[len(u.admissions)-1] == exp.UnixMilli() {
				continue // the same admission told again (a reconnect, a rebuild)
			}
			u.admissions = append(u.admissions, exp.UnixMilli())
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond) // choosing a seat
			switch outcome := rndReserve(servers, at, m.Pass, rng, exp); outcome {
			case "ticket", "sold_out":
				if outcome == "sold_out" {
					u.soldOut = true
				} else {
					u.ticket = "yes"
				}
				return true
			case "lapsed":
				// The admission is over without a ticket: queue again from the end (a new place).
				u.requeued = true
				u.token = ""
				return false
			}
		}
	}
	return false
}

// rndReserve tries seats until one is booked, the screening sold out, or the admission is over, first on
// servers[at]. A request that gets no answer is retried on the next server, as a client behind a load
// balancer would be: the instance may have died after its commit, and only another one can replay it.
func rndReserve(servers []*apptest.Server, at int, pass string, rng *rand.Rand, expires time.Time) string {
	srv := servers[at]
	seatIDs := make([]string, 0, rndSeats)
	for r := 0; r < 4; r++ {
		for n := 1; n <= rndSeats/4; n++ {
			seatIDs = append(seatIDs, fmt.Sprintf("%c%d", 'A'+r, n))
		}
	}
	key := queue.NewToken() // one Idempotency-Key per attempt at a seat: a retried 503 cannot book twice
	seat := seatIDs[rng.IntN(len(seatIDs))]
	for time.Now().Before(expires) {
		body, _ := json.Marshal(map[string]any{"seats": []string{seat}})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/screenings/rnd/reservations", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+pass)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			at = (at + 1) % len(servers)
			srv = servers[at]
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		switch code := apptest.ErrorCode(out); {
		case resp.StatusCode == http.StatusCreated:
			return "ticket"
		case code == "SOLD_OUT":
			return "sold_out"
		case code == "SEAT_TAKEN" || code == "SEAT_LOCKED" || code == "LOCK_EXPIRED":
			seat, key = seatIDs[rng.IntN(len(seatIDs))], queue.NewToken()
		case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode >= 500:
			time.Sleep(150 * time.Millisecond) // fails closed: try again once the store is back
		case code == "INVALID_PASS" || code == "PASS_SPENT":
			return "lapsed"
		default:
			time.Sleep(150 * time.Millisecond)
		}
	}
	return "lapsed"
}

// rndCheck checks the history against the guarantees.
func rndCheck(t *testing.T, env *testenv.Env, users []*rndUser, maxActive int64, events *rndEvents) {
	t.Helper()
	ctx := context.Background()
	// 1: no seat sold twice, and the database agrees with the users.
	var twice []string
	if err := env.DB.SelectContext(ctx, &twice, `SELECT seat_id FROM reservation_seats WHERE screening_id = 'rnd' GROUP BY seat_id HAVING COUNT(*) > 1`); err != nil {
		t.Fatal(err)
	}
	if len(twice) > 0 {
		t.Errorf("guarantee 1: seats sold twice: %v", twice)
	}
	var sold int
	if err := env.DB.GetContext(ctx, &sold, `SELECT COUNT(*) FROM reservation_seats WHERE screening_id = 'rnd'`); err != nil {
		t.Fatal(err)
	}
	tickets, soldOut, requeued, admissions := 0, 0, 0, 0
	for _, u := range users {
		switch {
		case u.err != "":
			t.Errorf("guarantee 2: user %d (token %s) lost: %s, admissions %v", u.n, u.token, u.err, u.admissions)
		case u.ticket != "":
			tickets++
		case u.soldOut:
			soldOut++
		default:
			t.Errorf("guarantee 2: user %d ended with neither a ticket nor sold out", u.n)
		}
		if u.requeued {
			requeued++
		}
		admissions += len(u.admissions)
	}
	if tickets != sold || sold != rndSeats {
		t.Errorf("guarantee 1/2: %d tickets told to users, %d seats sold in SQL, want both %d", tickets, sold, rndSeats)
	}
	// 3: at most batch_size per admission (each event is one tick or refill), max_active at a time, queue
	// order.
	events.mu.Lock()
	heard := slices.Clone(events.evs)
	events.mu.Unlock()
	heardAdmissions := 0
	for _, ev := range heard {
		heardAdmissions += len(ev.Admitted)
		if len(ev.Admitted) > rndBatch {
			t.Errorf("guarantee 3: event %d admitted %d, want at most batch_size %d", ev.Epoch, len(ev.Admitted), rndBatch)
		}
	}
	if maxActive > rndMaxActive {
		t.Errorf("guarantee 3: %d admitted at once in Redis, want at most %d", maxActive, rndMaxActive)
	}
	// A user acknowledged before another dialled is admitted no later, unless its own first admission
	// lapsed (it queued again from the end).
	order := slices.Clone(users)
	slices.SortFunc(order, func(a, b *rndUser) int { return a.ackedAt.Compare(b.ackedAt) })
	for i, a := range order {
		if len(a.admissions) == 0 {
			continue
		}
		for _, b := range order[i+1:] {
			if len(b.admissions) == 0 || !a.ackedAt.Before(b.dialedAt) {
				continue
			}
			if b.admissions[0] < a.admissions[0] {
				t.Errorf("guarantee 3: user %d (placed first) admitted until %d, after user %d (placed later) until %d; heard: %s; %s",
					a.n, a.admissions[0], b.n, b.admissions[0], rndHeard(heard, a.token), rndHeard(heard, b.token))
			}
		}
	}
	t.Logf("history: %d users, %d admissions told (%d in %d events heard), %d tickets, %d sold out, %d queued again after a lapse, peak active %d, seats sold %d, violations found: %d",
		len(users), admissions, heardAdmissions, len(heard), tickets, soldOut, requeued, maxActive, sold, rndViolations(t))
}

// rndViolations is 0 when the test has not failed (for the report line).
func rndViolations(t *testing.T) int {
	if t.Failed() {
		return 1
	}
	return 0
}

// testenvSeed is WAITROOM_FAULT_SEED, to replay a schedule (0: none given).
func testenvSeed() uint64 {
	s, _ := strconv.ParseUint(os.Getenv("WAITROOM_FAULT_SEED"), 10, 64)
	return s
}

// rndHeard describes the events heard that admitted token, for a failure's message.
func rndHeard(heard []queue.Event, token string) string {
	var out []string
	for _, ev := range heard {
		if i := slices.Index(ev.Admitted, token); i >= 0 {
			out = append(out, fmt.Sprintf("epoch %d tick_at %d (#%d of %v)", ev.Epoch, ev.TickAtMs, i, len(ev.Admitted)))
		}
	}
	return token[:min(8, len(token))] + " by " + strings.Join(out, ", ")
}
