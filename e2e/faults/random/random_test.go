//go:build faults

// The randomized fault run: users queue, are admitted and reserve on three server processes while a seeded
// schedule breaks both stores and the processes; then the history is held to docs/reliability.md's
// guarantees.

package random

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

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
	userCount = 60
	seatCount = 40 // fewer than users: the last ones end sold out
	batchSize = 2
	maxActive = 4
	interval  = 400 * time.Millisecond
	activeTTL = 20 * time.Second
	faultsFor = 12 * time.Second
	runWithin = 90 * time.Second
)

// user is one virtual user and its history.
type user struct {
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

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRandomFaultScheduleKeepsTheGuarantees(t *testing.T) {
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
	env.Demo(t, "rnd", 4, seatCount/4)
	settings := map[string]string{
		"WAITROOM_ADMISSION_INTERVAL":   interval.String(),
		"WAITROOM_ADMISSION_BATCH_SIZE": strconv.Itoa(batchSize),
		"WAITROOM_ADMISSION_MAX_ACTIVE": strconv.Itoa(maxActive),
		"WAITROOM_ADMISSION_ACTIVE_TTL": activeTTL.String(),
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
	events := observe(t, env)

	// Guarantee 3, max_active: sample the active set straight from Redis (not through the proxy).
	stopSampling := sampleActive(env)

	users := make([]*user, userCount)
	var wg sync.WaitGroup
	deadline := time.Now().Add(runWithin)
	for i := range users {
		u := &user{n: i}
		users[i] = u
		// One after the other: user i's place was acknowledged before user i+1 dialled (queue order).
		acked := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			runUser(t, servers, u, acked, deadline)
		}()
		select {
		case <-acked:
		case <-time.After(20 * time.Second):
			t.Fatalf("user %d got no place within 20s", i)
		}
	}

	inject(t, rng, rs, rp, pp, procs)
	t.Logf("faults over; waiting for every user")
	wg.Wait()
	maxSeen := stopSampling()

	check(t, env, users, maxSeen, events)
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

// inject runs the seeded schedule for faultsFor: one fault at a time, each followed by a healthy moment,
// among resets and cuts of Redis (rp) and PostgreSQL (pp) and a pause of instance 0 or 1; at a random
// moment Redis (rs) restarts empty once, and at another instance 2 is killed.
func inject(t *testing.T, rng *rand.Rand, rs *testenv.RedisServer, rp, pp *testenv.Proxy, procs []*apptest.Process) {
	began := time.Now()
	faultsEnd := began.Add(faultsFor)
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
