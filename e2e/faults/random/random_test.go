//go:build faults

// The randomized fault run: users queue, are admitted, hold seats and pay, cancel, walk away or are refunded
// on three server processes while a seeded schedule breaks both stores and the processes; then the history
// is held to docs/reliability.md's guarantees.

package random

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// plan is the size of one run: its users and house, its pace of admission, and how long and how hard the
// faults go on.
type plan struct {
	users                int
	seatRows, seatsInRow int
	batchSize, maxActive int
	interval, activeTTL  time.Duration
	// faultsFor is how long the schedule runs; runWithin bounds the whole run (a user not done by then is
	// lost).
	faultsFor, runWithin time.Duration
	// arrivalEvery paces the users' arrival (0: each dials as soon as the one before has its place).
	arrivalEvery time.Duration
	// redisRestarts and kills are how many times Redis restarts empty and instance 2 is killed, at random
	// moments of the schedule; restartKilled starts the killed instance again a moment later.
	redisRestarts, kills int
	restartKilled        bool
	// logFaults logs every fault as it is made (the soak counts them instead).
	logFaults bool
}

// The default run (make test-faults, in CI): 60 users for 24 seats, so that the holds that lapse, the
// cancels and the refunds give seats back and the sale still sells out near the end; one Redis restart and
// one kill.
var quick = plan{
	users: 60, seatRows: 4, seatsInRow: 6,
	batchSize: 2, maxActive: 8, interval: 200 * time.Millisecond, activeTTL: 20 * time.Second,
	faultsFor: 12 * time.Second, runWithin: 90 * time.Second,
	redisRestarts: 1, kills: 1, logFaults: true,
}

// The soak (WAITROOM_SOAK=1): thousands of users arriving over ten minutes of faults, Redis restarted and an
// instance killed and started again every few minutes.
var soak = plan{
	users: 4000, seatRows: 40, seatsInRow: 25,
	batchSize: 4, maxActive: 16, interval: 250 * time.Millisecond, activeTTL: 20 * time.Second,
	faultsFor: 10 * time.Minute, runWithin: 14 * time.Minute, arrivalEvery: 140 * time.Millisecond,
	redisRestarts: 6, kills: 8, restartKilled: true,
}

// Every run holds its orders for holdTTL: a payer's delay straddles it, so some pay too late.
const (
	holdTTL    = 2 * time.Second
	confirmKey = "payments-key-0123456789"
	// webhookSecret is a Standard Webhooks secret: whsec_ and the base64 of 32 bytes.
	webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6sHz2oC9NHs="
)

// user is one virtual user and its history.
type user struct {
	n        int
	token    string
	ackedAt  time.Time // its first queued/prequeue arrived
	dialedAt time.Time
	// admissions are the expiries (Unix ms) of the admissions it was told of, in order, and admittedAs the
	// token each was told to.
	admissions []int64
	admittedAs []string
	// receipts are the receipts of its places, as its first messages carried them (each once).
	receipts []string
	requeued bool // its admission lapsed or was refused, and it queued again
	// lost are the places it lost on a reconnect (told a new token, or its own inserted again at the end):
	// only a Redis restart may lose a place, for a socket no instance held when the line was rebuilt.
	lost []lostPlace
	// intent is what it does with a held order: pay, lapse, cancel or refund (pay, then the operator
	// cancels).
	intent  string
	order   *order // the order it was told of, if any
	soldOut bool
	err     string
	doneAt  time.Time
	// lastRefusal is the code of the last refusal of its reservations.
	lastRefusal string
	// busy counts its sockets refused BUSY (every handshake slot taken); each reconnect keeps the place.
	busy int
	// waitlisted counts the sold_out messages that kept it on the waitlist; onWaitlist says it waits there
	// now (no offer since); offers are the waitlist's offers it was told of.
	waitlisted int
	onWaitlist atomic.Bool
	offers     []offer
	finished   atomic.Bool // runUser returned
}

// offer is a waitlist's offer a user was told of: to which of its tokens, until when, of how many seats.
type offer struct {
	token     string
	expiresAt time.Time
	seats     int
}

// lostPlace is a place a user lost: it was placed at placedAt and told of a new place at at.
type lostPlace struct{ placedAt, at time.Time }

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The randomized fault run (make test-faults): three server processes share a Redis and a PostgreSQL, each
// behind a fault proxy; users queue, are admitted, hold seats and pay, walk away, cancel or are refunded,
// while a seeded random schedule resets and cuts both stores, restarts Redis empty once, kills one instance
// (SIGKILL) and pauses others (SIGSTOP) past their seat locks' lease. Afterwards the history is checked
// against the guarantees of docs/reliability.md: no seat sold twice (1); every user who got a place ends
// with an order it knows the end of, or sold out, nobody lost (2); admissions in queue order, never more
// than batch_size at once nor max_active at a time (3); and, read from PostgreSQL once the holds have
// lapsed, every order's history (4) and the admission log: every receipt and admission the users were told
// in it, in order, nothing else admitted, its rules kept (judgeLog).
func TestRandomFaultScheduleKeepsTheGuarantees(t *testing.T) {
	runSchedule(t, quick)
}

// The soak: the same run, bigger and longer (WAITROOM_SOAK=1 go test -tags faults -run Soak -timeout 30m).
func TestSoakRandomFaults(t *testing.T) {
	if os.Getenv("WAITROOM_SOAK") != "1" {
		t.Skip("the soak runs with WAITROOM_SOAK=1 (about 15 minutes)")
	}
	runSchedule(t, soak)
}

func runSchedule(t *testing.T, p plan) {
	began := time.Now()
	seed := uint64(time.Now().UnixNano())
	if s := envSeed(); s != 0 {
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
	env.Demo(t, "rnd", p.seatRows, p.seatsInRow)
	hooks := receiveWebhooks(t)
	// The admission log is kept, so the run is checked against it (log_test.go).
	logKey, err := fairlog.GenerateKey("faults-log")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{
		"WAITROOM_FAIRNESS_KEY":         logKey,
		"WAITROOM_ADMISSION_INTERVAL":   p.interval.String(),
		"WAITROOM_ADMISSION_BATCH_SIZE": strconv.Itoa(p.batchSize),
		"WAITROOM_ADMISSION_MAX_ACTIVE": strconv.Itoa(p.maxActive),
		"WAITROOM_ADMISSION_ACTIVE_TTL": p.activeTTL.String(),
		"WAITROOM_DEMO_ENABLED":         "false",
		"WAITROOM_LOG_LEVEL":            "error",
		"WAITROOM_ADMISSION_LOCK_TTL":   "1s", // a killed or paused instance's tick lock frees soon
		"WAITROOM_BOOKING_LOCK_LEASE":   "1s", // so a pause outlasts a seat lock held
		"WAITROOM_BOOKING_LOCK_WAIT":    "500ms",
		"WAITROOM_BOOKING_CHECKOUT":     "hold",
		"WAITROOM_BOOKING_HOLD_TTL":     holdTTL.String(),
		"WAITROOM_BOOKING_CONFIRM_KEY":  confirmKey,
		"WAITROOM_BOOKING_CHECKOUT_URL": "https://shop.example/pay?order={code}", // never visited: users confirm with the key
		// The waitlist: once every seat is held or sold the line stays, and what comes back is offered in
		// its order (check_test.go holds the offers to it).
		"WAITROOM_BOOKING_WAITLIST":  "true",
		"WAITROOM_BOOKING_OFFER_TTL": p.activeTTL.String(),
		"WAITROOM_ADMIN_KEY":         apptest.AdminKey,
		"WAITROOM_WEBHOOKS_URL":      hooks.URL,
		"WAITROOM_WEBHOOKS_SECRET":   webhookSecret,
		// One handshake at a time, waited for 1 ms: arrivals that meet (the reconnects after a kill or a
		// restart) are refused BUSY, 20 to 50 in a run, and must come back to their place.
		"WAITROOM_OVERLOAD_HANDSHAKES":     "1",
		"WAITROOM_OVERLOAD_HANDSHAKE_WAIT": "1ms",
	}
	// Three server processes, so one can be killed (SIGKILL) and another paused (SIGSTOP) past its seat locks'
	// lease while the third serves.
	bin := apptest.Build(t)
	client := &http.Client{Timeout: 5 * time.Second}
	procs := make([]*apptest.Process, 3)
	servers := &fleet{urls: make([]string, len(procs)), over: make(chan struct{})}
	for i := range procs {
		if procs[i] = apptest.StartProcess(t, client, bin, &viaProxies, i, settings); procs[i] == nil {
			t.Fatalf("instance %d did not start", i)
		}
		servers.set(i, procs[i].URL)
	}
	restart := func() *apptest.Process {
		p := apptest.StartProcess(t, client, bin, &viaProxies, 2, settings)
		if p != nil {
			servers.set(2, p.URL)
		}
		return p
	}
	events := observe(t, env)

	// Guarantee 3, max_active: sample the active set straight from Redis (not through the proxy).
	stopSampling := sampleActive(env)

	deadline := time.Now().Add(p.runWithin)
	var faults faultCount
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		inject(t, p, rng, rs, rp, pp, procs, restart, &faults)
	}()
	var users []*user
	var wg sync.WaitGroup
	intents := rand.New(rand.NewPCG(seed, 21))
	for i := 0; i < p.users; i++ {
		if p.arrivalEvery > 0 {
			select {
			case <-faultsDone:
			case <-time.After(p.arrivalEvery):
			}
			if isClosed(faultsDone) {
				break // the soak's arrivals end with its faults
			}
		}
		u := &user{n: i, intent: pickIntent(intents)}
		users = append(users, u)
		// One after the other: user i's place was acknowledged before user i+1 dialled (queue order).
		acked := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			runUser(servers, p, u, acked, deadline)
			u.doneAt = time.Now()
			u.finished.Store(true)
		}()
		select {
		case <-acked:
		case <-time.After(20 * time.Second):
			t.Errorf("user %d got no place within 20s", i)
		}
	}
	go endTheWaitlist(servers, users, faultsDone)
	<-faultsDone
	faultsOver := time.Now()
	t.Logf("faults over (%s); waiting for every user", faults.String())
	wg.Wait()
	t.Logf("every user done %v after the faults", time.Since(faultsOver).Round(100*time.Millisecond))
	last := slices.Clone(users)
	slices.SortFunc(last, func(a, b *user) int { return b.doneAt.Compare(a.doneAt) })
	for _, u := range last[:min(3, len(last))] {
		t.Logf("a last user: %d done %v after the faults: intent %s, order %v, sold out %v, admissions %d, requeued %v",
			u.n, u.doneAt.Sub(faultsOver).Round(100*time.Millisecond), u.intent, u.order != nil, u.soldOut, len(u.admissions), u.requeued)
	}
	maxSeen := stopSampling()
	// Every hold has lapsed by now plus holdTTL; the sweeper expires it within a second or so. The wait
	// is for the holds' lapse, a time, not an event: the sweep that follows is awaited below as the
	// outbox draining.
	settle := time.Now().Add(holdTTL + 3*time.Second)
	time.Sleep(time.Until(settle))
	// Then every webhook is delivered: at once, or, for those an instance claimed and could not record
	// (killed, or PostgreSQL cut), once their lease of three 10 s attempt timeouts ends.
	drained := waitDelivered(env, 40*time.Second)
	t.Logf("outbox drained %v after the run settled", drained.Round(100*time.Millisecond))

	h := history{plan: p, users: users, peakActive: maxSeen, events: events, faults: &faults, hooks: hooks, began: began, logKey: logKey}
	check(t, env, &h)
}

// endTheWaitlist closes servers.over once the faults are over, every user is done or waits on the
// waitlist, and every seat is sold: nothing can come back to offer then.
func endTheWaitlist(servers *fleet, users []*user, faultsDone chan struct{}) {
	<-faultsDone
	for {
		time.Sleep(500 * time.Millisecond)
		waiting := 0
		for _, u := range users {
			if !u.finished.Load() && !u.onWaitlist.Load() {
				waiting = -1
				break
			}
			if !u.finished.Load() {
				waiting++
			}
		}
		if waiting == 0 {
			return // nobody left on the waitlist
		}
		if waiting > 0 && soldOut(servers, 0) {
			close(servers.over)
			return
		}
	}
}

// waitDelivered waits up to within for every outbox row to be delivered or given up, and returns how long
// it waited.
func waitDelivered(env *testenv.Env, within time.Duration) time.Duration {
	began := time.Now()
	for time.Since(began) < within {
		var pending int
		err := env.DB.Get(&pending, `SELECT COUNT(*) FROM webhook_outbox WHERE delivered_at IS NULL AND failed_at IS NULL`)
		if err == nil && pending == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return time.Since(began)
}

// isClosed reports whether c is closed, without waiting.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// pickIntent draws what a user will do with its held order: mostly pay; some walk away, cancel, or pay and
// are refunded.
func pickIntent(rng *rand.Rand) string {
	switch n := rng.IntN(20); {
	case n < 10:
		return intentPay
	case n < 13:
		return intentLapse
	case n < 16:
		return intentCancel
	default:
		return intentRefund
	}
}

// fleet is where the instances serve; a restarted instance serves at a new address.
type fleet struct {
	mu   sync.RWMutex
	urls []string
	// over is closed once the sale is over (every seat sold, every user done or waiting on the waitlist):
	// the users still on the waitlist end there.
	over chan struct{}
}

func (f *fleet) url(i int) string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.urls[i%len(f.urls)]
}

func (f *fleet) size() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.urls)
}

func (f *fleet) set(i int, url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.urls[i] = url
}

// faultCount counts the faults made, by kind.
type faultCount struct {
	mu    sync.Mutex
	kinds map[string]int
	total int
	// restarts are when Redis was restarted empty (its kill), for the places a restart may lose.
	restarts []time.Time
}

// restarted notes a Redis restart (empty) beginning now, and returns its fault's number.
func (c *faultCount) restarted() int {
	n := c.add("redis restart")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restarts = append(c.restarts, time.Now())
	return n
}

// restartBetween reports whether Redis restarted empty between from and to.
func (c *faultCount) restartBetween(from, to time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.restarts, func(at time.Time) bool { return !at.Before(from) && !at.After(to) })
}

// add counts a fault of kind and returns how many were made so far.
func (c *faultCount) add(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds == nil {
		c.kinds = map[string]int{}
	}
	c.kinds[kind]++
	c.total++
	return c.total
}

func (c *faultCount) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d faults: %d Redis resets, %d Redis cuts, %d PostgreSQL resets, %d PostgreSQL cuts, %d pauses, %d Redis restarts, %d kills",
		c.total, c.kinds["redis reset"], c.kinds["redis cut"], c.kinds["pg reset"], c.kinds["pg cut"], c.kinds["pause"], c.kinds["redis restart"], c.kinds["kill"])
}

// sampleActive samples the size of the active set every 5 ms, straight from env's Redis, until the
// returned stop is called; stop returns the largest size seen.
func sampleActive(env *testenv.Env) (stop func() int64) {
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
	return func() int64 {
		close(stopSampling)
		sampling.Wait()
		return maxSeen
	}
}

// moments draws n moments of the schedule in [1 s, span - 4 s) for its big faults (restarts, kills); the
// default run's one of each falls in its first 8 s, as before.
func moments(rng *rand.Rand, n int, began time.Time, span time.Duration) []time.Time {
	window := min(span-4*time.Second, 7*time.Second)
	if n > 1 {
		window = span - 5*time.Second
	}
	out := make([]time.Time, n)
	for i := range out {
		// One in each of n equal slices of the window, so they spread over the whole soak.
		slice := window / time.Duration(n)
		out[i] = began.Add(time.Second + slice*time.Duration(i) + time.Duration(rng.Int64N(int64(slice))))
	}
	return out
}

// inject runs the seeded schedule for p.faultsFor: one fault at a time, each followed by a healthy moment,
// among resets and cuts of Redis (rp) and PostgreSQL (pp) and a pause of instance 0 or 1; at random moments
// Redis (rs) restarts empty and instance 2 is killed (and, in the soak, started again by restart).
func inject(t *testing.T, p plan, rng *rand.Rand, rs *testenv.RedisServer, rp, pp *testenv.Proxy, procs []*apptest.Process,
	restart func() *apptest.Process, faults *faultCount) {
	began := time.Now()
	faultsEnd := began.Add(p.faultsFor)
	restartAt := moments(rng, p.redisRestarts, began, p.faultsFor)
	killAt := moments(rng, p.kills, began, p.faultsFor)
	logf := func(format string, args ...any) {
		if p.logFaults {
			t.Logf(format, args...)
		}
	}
	for time.Now().Before(faultsEnd) {
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		hold := time.Duration(300+rng.IntN(1500)) * time.Millisecond
		switch k := rng.IntN(5); {
		case len(restartAt) > 0 && time.Now().After(restartAt[0]):
			restartAt = restartAt[1:]
			t.Logf("fault %d: restart Redis empty (down %v)", faults.restarted(), hold)
			rs.Kill()
			time.Sleep(hold)
			rs.Start()
		case len(killAt) > 0 && time.Now().After(killAt[0]):
			killAt = killAt[1:]
			t.Logf("fault %d: SIGKILL instance 2", faults.add("kill"))
			_ = procs[2].Cmd.Process.Kill()
			<-procs[2].Done()
			if p.restartKilled {
				time.Sleep(hold)
				if np := restart(); np != nil {
					procs[2] = np
				}
			}
		case k == 0:
			faults.add("redis reset")
			logf("fault: reset Redis connections")
			rp.Reset()
		case k == 1:
			faults.add("redis cut")
			logf("fault: cut Redis for %v", hold)
			rp.Cut()
			time.Sleep(hold)
			rp.Restore()
		case k == 2:
			faults.add("pg reset")
			logf("fault: reset PostgreSQL connections")
			pp.Reset()
		case k == 3:
			faults.add("pg cut")
			logf("fault: cut PostgreSQL for %v", hold)
			pp.Cut()
			time.Sleep(hold)
			pp.Restore()
		case k == 4:
			pr := procs[rng.IntN(2)] // 0 or 1: never the one to be killed
			faults.add("pause")
			logf("fault: pause instance %d for %v (past the 1 s seat-lock lease)", pr.N, hold+time.Second)
			_ = pr.Cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(hold + time.Second)
			_ = pr.Cmd.Process.Signal(syscall.SIGCONT)
		}
	}
}

// webhookSink is the webhooks' receiver: it answers 204 to every delivery and counts them by message id.
type webhookSink struct {
	URL  string
	mu   sync.Mutex
	seen map[string]int
	n    atomic.Int64
}

// receiveWebhooks starts the receiver, closed when the test ends.
func receiveWebhooks(t *testing.T) *webhookSink {
	s := &webhookSink{seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.n.Add(1)
		s.mu.Lock()
		s.seen[r.Header.Get("webhook-id")]++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/hooks"
	return s
}

// eventLog is the admission events the test heard, straight from Redis (those published while Redis was
// unreachable were heard by nobody).
type eventLog struct {
	mu  sync.Mutex
	evs []queue.Event
}

// observe follows the screening's events on both kinds of pub/sub (the servers use sharded pub/sub on
// Redis 7); go-redis subscribes again after the restart.
func observe(t *testing.T, env *testenv.Env) *eventLog {
	t.Helper()
	channel := queue.Key(env.Prefix, "rnd", "events")
	e := &eventLog{}
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
