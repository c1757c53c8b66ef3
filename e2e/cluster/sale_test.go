//go:build cluster

// Two instances on one Redis Cluster sell two screenings, on two masters, each seat once, with every
// socket's rank true and every pass delivered whichever instance admitted it.

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// The admission pace of the cluster test: two at a time, four holding a slot at most, and users who take a
// moment to pick a seat, so admitting a line takes several ticks and refills, run by either instance.
const (
	interval  = 500 * time.Millisecond
	batchSize = 2
	maxActive = 4
	thinkTime = 300 * time.Millisecond
)

// TestClusterTwoInstancesAdmitEverySocketAndSellEachSeatOnce runs two server instances on one 3-master Redis
// Cluster and one database. Two screenings whose keys live on different masters fill their lines with
// sockets on both instances before the sale opens; then every socket must see its true rank fall, get its
// own pass whichever instance admitted it, and reserve with it through the other instance. The short
// screening (8 seats, 12 users) sells each seat once and tells the rest it is sold out; the roomy one
// (10 seats, 4 users) seats everyone. Every key of a screening is in its one slot. (The sockets wait in the
// pre-queue; the opening shuffles them into the line.)
func TestClusterTwoInstancesAdmitEverySocketAndSellEachSeatOnce(t *testing.T) {
	began := time.Now()
	env := testenv.Cluster(t, startCluster(t))
	rdb := env.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	short, roomy := screeningsOnTwoMasters(t, ctx, rdb, env.Prefix)

	settings := map[string]string{
		"WAITROOM_DEMO_ENABLED":         "false",
		"WAITROOM_ADMISSION_INTERVAL":   interval.String(),
		"WAITROOM_ADMISSION_BATCH_SIZE": strconv.Itoa(batchSize),
		"WAITROOM_ADMISSION_MAX_ACTIVE": strconv.Itoa(maxActive),
		"WAITROOM_BOOKING_LOCK_WAIT":    "1s",
		// A rank after every admission, so that each user's last rank before its pass is at most a batch
		// away (the check below). The pace of hub.rank_interval can leave out the ranks of an admission a
		// refill follows within it; it is tested in hub and e2e/instances.
		"WAITROOM_HUB_RANK_INTERVAL": "0s",
	}
	srvs := []*apptest.Server{apptest.Start(t, env, settings), apptest.Start(t, env, settings)}

	// The sale opens once every socket is in line, so each queued rank is exact and the line only shrinks.
	const registerWithin = 3 * time.Second
	opens := time.Now().Add(registerWithin).Truncate(time.Millisecond)
	lines := []*line{
		{id: short.id, seats: 8, users: 12},
		{id: roomy.id, seats: 10, users: 4},
	}
	store := booking.NewStore(env.DB)
	for _, l := range lines {
		_, err := store.EnsureScreening(ctx, booking.Screening{
			ID: l.id, Name: "Cluster " + l.id, StartsAt: opens.Add(time.Hour), SaleOpensAt: opens,
		}, booking.Grid(1, l.seats))
		if err != nil {
			t.Fatal(err)
		}
	}

	// Users alternate between the instances, so every admission of two spans both.
	for _, l := range lines {
		for i := range l.users {
			u := &user{screening: l.id, seq: int64(i + 1), inst: i % 2}
			u.c = srvs[u.inst].Dial(t, l.id, "")
			u.queued = u.c.Next(t, 5*time.Second)
			if q := u.queued; q.Type != "prequeue" || !q.Inserted || q.Total != u.seq {
				t.Fatalf("%s user %d: first message %+v, want prequeue, inserted, %d in it", l.id, u.seq, q, u.seq)
			}
			l.all = append(l.all, u)
		}
	}
	if !time.Now().Before(opens) {
		t.Fatalf("registering the sockets took past the sale's opening (%v); the rank checks below need them in line first", registerWithin)
	}
	// At the opening the pre-queue takes its places in the order of its shuffle keys: read it now, so each
	// user's seq is its place in the line (the shuffle itself is checked in queue's tests).
	for _, l := range lines {
		order, err := rdb.ZRange(ctx, queue.Key(env.Prefix, l.id, "pre"), 0, -1).Result()
		if err != nil || len(order) != len(l.all) {
			t.Fatalf("%s pre-queue = %v, %v; want its %d users", l.id, order, err, len(l.all))
		}
		for _, u := range l.all {
			u.seq = int64(slices.Index(order, u.queued.Token) + 1)
		}
	}

	var wg sync.WaitGroup
	for _, l := range lines {
		for _, u := range l.all {
			wg.Go(func() { u.follow(srvs[1-u.inst].URL, l.seats < l.users) })
		}
	}
	wg.Wait()
	t.Logf("sale opened %v after the start; every user done %v after the opening", opens.Sub(began).Round(time.Millisecond), time.Since(opens).Round(time.Millisecond))

	for _, l := range lines {
		l.check(t, ctx, env, rdb, srvs)
	}
	checkKeysStayInTheirSlot(t, ctx, rdb, env.Prefix, short, roomy)

	// The first tick admitted the first two of the shuffled line together (one expiry); every user got its pass
	// on whichever instance it joined, whichever ran the tick (check above).
	bySeq := func(seq int64) *user {
		return lines[0].all[slices.IndexFunc(lines[0].all, func(u *user) bool { return u.seq == seq })]
	}
	first, second := bySeq(1), bySeq(2)
	if first.admitted.ExpiresAt != second.admitted.ExpiresAt {
		t.Errorf("first two of %s admitted at %s and %s, want one tick", short.id, first.admitted.ExpiresAt, second.admitted.ExpiresAt)
	}

	// Sold out is announced by both instances, to a new registration and in the list.
	for i, srv := range srvs {
		if m := srv.Dial(t, short.id, "").Next(t, 5*time.Second); m.Type != "sold_out" {
			t.Errorf("instance %d: a new registration for %s got %+v, want sold_out", i, short.id, m)
		}
		var list []map[string]any
		srv.GetJSON(t, "/api/screenings", &list)
		for _, s := range list {
			if want := map[string]string{short.id: "sold_out", roomy.id: "on_sale"}[s["id"].(string)]; s["state"] != want {
				t.Errorf("instance %d: %s state %v, want %s", i, s["id"], s["state"], want)
			}
		}
	}
	t.Logf("cluster test took %v", time.Since(began).Round(time.Millisecond))
}

// line is one screening's side of the test.
type line struct {
	id           string
	seats, users int
	all          []*user
}

// user is one socket in line; follow fills in what happened to it.
type user struct {
	screening string
	seq       int64 // its place in the order of arrival, 1-based: its rank when the sale opened
	inst      int   // the instance its socket is on; it reserves through the other one
	c         *testenv.Socket

	queued    testenv.Message
	positions []testenv.Message
	admitted  testenv.Message
	seat      string // the seat it bought
	// soldOut: it got no seat because none was left (its socket or its reservation said so); toldSoldOut: its
	// socket said so, before or after its admission.
	soldOut, toldSoldOut bool
	err                  error
}

// follow reads u's socket until it is admitted or told sold out, then reserves one seat through the server at
// reserveURL. When the screening sells out (soldOutComing), it then reads on until its socket is told so.
// It runs on its own goroutine: it records problems in u.err rather than failing the test.
func (u *user) follow(reserveURL string, soldOutComing bool) {
	deadline := time.Now().Add(30 * time.Second)
	for u.admitted.Type == "" && !u.toldSoldOut {
		m, err := u.read(deadline)
		switch {
		case err != nil:
			u.err = fmt.Errorf("read after %d positions: %w", len(u.positions), err)
			return
		case m.Type == "position":
			u.positions = append(u.positions, m)
		case m.Type == "sold_out":
			u.soldOut, u.toldSoldOut = true, true
		case m.Type == "admitted":
			u.admitted = m
		default:
			u.err = fmt.Errorf("unexpected message %+v", m)
			return
		}
	}
	if u.admitted.Type == "admitted" {
		if u.admitted.Token != u.queued.Token || u.admitted.Pass == "" {
			u.err = fmt.Errorf("admitted %+v, want its own token %s and a pass", u.admitted, u.queued.Token)
			return
		}
		time.Sleep(thinkTime)
		if u.err = u.reserve(reserveURL); u.err != nil {
			return
		}
	}
	if soldOutComing && !u.toldSoldOut {
		// After admitted, nothing comes but the seats others take and sold_out (docs/protocol.md 4.2), to
		// the seated too.
		deadline := time.Now().Add(10 * time.Second)
		m, err := u.read(deadline)
		for err == nil && m.Type == "seats" {
			m, err = u.read(deadline)
		}
		if err != nil || m.Type != "sold_out" {
			u.err = fmt.Errorf("after admission (seat %q): got %+v (%v), want sold_out", u.seat, m, err)
			return
		}
		u.toldSoldOut = true
	}
}

func (u *user) read(deadline time.Time) (testenv.Message, error) {
	_ = u.c.SetReadDeadline(deadline)
	var m testenv.Message
	err := u.c.ReadJSON(&m)
	return m, err
}

// reserve buys one seat with u's pass: the first shown available, the next one when that is taken.
func (u *user) reserve(baseURL string) error {
	for range 20 {
		var seats []struct{ ID, Status string }
		if err := getJSONErr(baseURL+"/api/screenings/"+u.screening+"/seats", &seats); err != nil {
			return err
		}
		seat := "A1" // none shown available: the screening is sold out, or about to be
		if i := slices.IndexFunc(seats, func(s struct{ ID, Status string }) bool { return s.Status == "available" }); i >= 0 {
			seat = seats[i].ID
		}
		code, body, err := reserveErr(baseURL, u.screening, u.admitted.Pass, seat)
		switch {
		case err != nil:
			return err
		case code == http.StatusCreated:
			u.seat = seat
			return nil
		case code == http.StatusConflict && apptest.ErrorCode(body) == "SOLD_OUT":
			u.soldOut = true
			return nil
		case code == http.StatusConflict && (apptest.ErrorCode(body) == "SEAT_TAKEN" || apptest.ErrorCode(body) == "SEAT_LOCKED"):
			time.Sleep(20 * time.Millisecond) // the seat map's sold set catches up with the commit
		default:
			return fmt.Errorf("reserve %s: %d %v", seat, code, body)
		}
	}
	return fmt.Errorf("no seat after 20 tries")
}

// check holds one screening to its promises: true ranks falling to admission, a pass per socket, each seat
// sold once (in SQL and in Redis's sold set), everyone else told sold out, each admission run once.
func (l *line) check(t *testing.T, ctx context.Context, env *testenv.Env, rdb *redis.ClusterClient, srvs []*apptest.Server) {
	t.Helper()
	n := int64(len(l.all))
	tickets := map[string]int64{} // seat -> user
	admitted, soldOut := 0, 0
	for _, u := range l.all {
		if u.admitted.Type == "admitted" {
			admitted++
		}
		if u.err != nil {
			t.Errorf("%s user %d (instance %d): %v", l.id, u.seq, u.inst, u.err)
			continue
		}
		// No one joined or left after the sale opened, so when the line holds total, n − total are admitted
		// and a socket's true rank is its place in arrival minus them.
		last := n + 1 // in the pre-queue: no rank before the opening
		for _, p := range u.positions {
			if want := u.seq - (n - p.Total); p.Rank != want || p.Rank >= last || p.Rank < 1 {
				t.Errorf("%s user %d: position %+v after rank %d, want rank %d (its true rank: %d − %d admitted), falling",
					l.id, u.seq, p, last, want, u.seq, n-p.Total)
			}
			last = p.Rank
		}
		if u.admitted.Type == "admitted" && len(u.positions) == 0 && u.seq > batchSize {
			t.Errorf("%s user %d: admitted at the opening from place %d, want at most %d (the opening's tick takes a batch)", l.id, u.seq, u.seq, batchSize)
		}
		if u.admitted.Type == "admitted" && len(u.positions) > 0 && last > batchSize {
			t.Errorf("%s user %d: admitted from rank %d, want at most %d (one admission takes at most a batch)", l.id, u.seq, last, batchSize)
		}
		switch {
		case u.seat != "":
			if other, dup := tickets[u.seat]; dup {
				t.Errorf("%s seat %s sold to users %d and %d", l.id, u.seat, other, u.seq)
			}
			tickets[u.seat] = u.seq
		case u.soldOut:
			soldOut++
		default:
			t.Errorf("%s user %d: neither a seat nor sold out", l.id, u.seq)
		}
		if sellsOut := l.seats < l.users; u.toldSoldOut != sellsOut {
			t.Errorf("%s user %d: socket told sold out %v, want %v", l.id, u.seq, u.toldSoldOut, sellsOut)
		}
	}
	wantTickets := min(l.seats, l.users)
	if len(tickets) != wantTickets || soldOut != l.users-wantTickets {
		t.Errorf("%s: %d tickets and %d told sold out, want %d and %d", l.id, len(tickets), soldOut, wantTickets, l.users-wantTickets)
	}

	var sqlSeats []string
	if err := env.DB.SelectContext(ctx, &sqlSeats, `SELECT seat_id FROM reservation_seats WHERE screening_id = $1 ORDER BY seat_id`, l.id); err != nil {
		t.Fatal(err)
	}
	redisSeats, err := rdb.SMembers(ctx, queue.Key(env.Prefix, l.id, "sold")).Result()
	if err != nil {
		t.Fatal(err)
	}
	redisSeats = slices.DeleteFunc(redisSeats, func(s string) bool { return s == "-" }) // booking's "loaded from SQL" mark
	slices.Sort(redisSeats)
	ticketSeats := make([]string, 0, len(tickets))
	for s := range tickets {
		ticketSeats = append(ticketSeats, s)
	}
	slices.Sort(ticketSeats)
	if !slices.Equal(sqlSeats, ticketSeats) || !slices.Equal(redisSeats, ticketSeats) {
		t.Errorf("%s sold seats: SQL %v, Redis %v; want the tickets' %v", l.id, sqlSeats, redisSeats, ticketSeats)
	}

	// Each admission ran once cluster-wide: the instances' counts add up to the passes handed out. (Where
	// the line sold out, a pass can be handed out to a socket closed by sold_out a moment before: only at least.)
	var ran, refills []int
	sum := 0
	for _, srv := range srvs {
		k := apptest.MetricValue(t, http.DefaultClient, srv.OpsURL, "waitroom_admission_admitted_total", l.id)
		ran = append(ran, k)
		refills = append(refills, apptest.MetricValue(t, http.DefaultClient, srv.OpsURL, "waitroom_admission_refills_total", l.id))
		sum += k
	}
	t.Logf("%s: %d admitted (by instance: %v, in %v refills), %d tickets, %d sold out", l.id, admitted, ran, refills, len(tickets), soldOut)
	if sum < admitted || (l.seats >= l.users && sum != admitted) {
		t.Errorf("%s: instances admitted %v, %d in all; want %d, the passes the sockets got", l.id, ran, sum, admitted)
	}
}

// getJSONErr and reserveErr are apptest's GetJSON and Reserve for goroutines other than the test's: they
// return errors.
func getJSONErr(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func reserveErr(baseURL, screening, pass string, seats ...string) (int, map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"seats": seats})
	req, err := http.NewRequest(http.MethodPost, baseURL+"/api/screenings/"+screening+"/reservations", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, nil
}
