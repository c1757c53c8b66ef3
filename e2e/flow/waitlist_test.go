// The waitlist across two instances: a sale whose seats are all held keeps its line; seats that come back
// (lapsed holds, refunds) are offered to the waiting in line order, one offer per seat; offers not taken pass
// to the next; a newcomer is offered nothing before those ahead of it; a party waits for seats together.

package flow

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// offerLog collects, from many sockets at once, who was offered seats and how many, in arrival order.
type offerLog struct {
	mu     sync.Mutex
	offers map[int][]testenv.Message // by the socket's place in line (0-based)
	order  []int
}

func (l *offerLog) add(i int, m testenv.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.offers[i] == nil {
		l.order = append(l.order, i)
	}
	l.offers[i] = append(l.offers[i], m)
}

// offered returns, sorted, the places offered seats so far, and how many offers there were in all.
func (l *offerLog) offered() ([]int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Sorted(func(yield func(int) bool) {
		for i := range l.offers {
			if !yield(i) {
				return
			}
		}
	})
	n := 0
	for _, ms := range l.offers {
		n += len(ms)
	}
	return out, n
}

// follow reads s in the background until it closes, noting its offers as place i's.
func (l *offerLog) follow(s *testenv.Socket, i int) {
	go func() {
		for {
			m, err := s.Read(time.Minute)
			if err != nil {
				return
			}
			if m.Type == "offered" {
				l.add(i, m)
			}
		}
	}()
}

// hooks receives the webhooks and counts them by type.
type hooks struct {
	mu    sync.Mutex
	count map[string]int
	srv   *httptest.Server
}

func receiveHooks(t *testing.T) *hooks {
	h := &hooks{count: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct{ Type string }
		_ = json.Unmarshal(body, &ev)
		h.mu.Lock()
		h.count[ev.Type]++
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hooks) of(typ string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count[typ]
}

// waitlistFigures is what the operator's view says of a waitlist.
type waitlistFigures struct {
	Waitlist bool `json:"waitlist"`
	Line     struct {
		Waitlist *queue.WaitlistFigures `json:"waitlist"`
	} `json:"line"`
}

// waitlistInstances starts two servers selling screening id (rows × perRow seats) in hold mode with the
// waitlist on: holds last holdTTL, offers offerTTL.
func waitlistInstances(t *testing.T, id string, rows, perRow int, holdTTL, offerTTL string, hooksURL string) (*apptest.Server, *apptest.Server) {
	env := testenv.New(t, testenv.Real)
	env.Demo(t, id, rows, perRow)
	settings := map[string]string{
		"WAITROOM_ADMISSION_INTERVAL":         "200ms",
		"WAITROOM_ADMISSION_BATCH_SIZE":       "100",
		"WAITROOM_ADMISSION_MAX_ACTIVE":       "1000",
		"WAITROOM_ADMISSION_ACTIVE_TTL":       "1m",
		"WAITROOM_BOOKING_CHECKOUT":           "hold",
		"WAITROOM_BOOKING_HOLD_TTL":           holdTTL,
		"WAITROOM_BOOKING_WAITLIST":           "true",
		"WAITROOM_BOOKING_OFFER_TTL":          offerTTL,
		"WAITROOM_ADMIN_KEY":                  apptest.AdminKey,
		"WAITROOM_BOOKING_CONFIRM_KEY":        boxConfirmKey,
		"WAITROOM_BOOKING_CHECKOUT_URL":       "https://shop.example/pay?order={code}",
		"WAITROOM_DEMO_ENABLED":               "false",
		"WAITROOM_LIMITS_ORDERS_PER_SECOND":   "0",
		"WAITROOM_LIMITS_SOCKETS_PER_ADDRESS": "0",
	}
	if hooksURL != "" {
		settings["WAITROOM_WEBHOOKS_URL"] = hooksURL
		settings["WAITROOM_WEBHOOKS_SECRET"] = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	}
	return apptest.Start(t, env, settings), apptest.Start(t, env, settings)
}

func TestTheWaitlistOffersWhatComesBackInLineOrderAcrossInstances(t *testing.T) {
	const seats, waiting = 60, 300
	h := receiveHooks(t)
	a, b := waitlistInstances(t, "wl", 2, seats/2, "10s", "8s", h.srv.URL)
	srvs := []*apptest.Server{a, b}

	// Sixty buyers, alternating instances, are admitted at once and each holds one seat.
	passes := make([]string, seats)
	var wg sync.WaitGroup
	for i := range seats {
		wg.Go(func() {
			s := srvs[i%2].Dial(t, "wl", "")
			m, err := s.ReadUntil(func(m testenv.Message) bool { return m.Type == "admitted" }, 10*time.Second)
			if err == nil {
				passes[i] = m.Pass
			}
			s.Close()
		})
	}
	wg.Wait()
	codes := make([]string, seats)
	for i, pass := range passes {
		if pass == "" {
			t.Fatalf("buyer #%d was not admitted", i)
		}
		code, o := srvs[i%2].ReserveCount(t, "wl", pass, 1)
		if code != http.StatusCreated || o["status"] != "held" {
			t.Fatalf("hold #%d = %d %v", i, code, o)
		}
		codes[i] = o["code"].(string)
	}
	// Every seat is held: the line is the waitlist from now on. Three hundred wait on it, in this order.
	log := &offerLog{offers: map[int][]testenv.Message{}}
	for i := range waiting {
		s := srvs[i%2].Dial(t, "wl", "")
		m, _ := s.Until(t, "queued", 10*time.Second)
		if m.Rank != int64(i+1) {
			t.Fatalf("waiter #%d queued at rank %d, want %d", i, m.Rank, i+1)
		}
		log.follow(s, i)
	}
	// Twenty buyers pay; the other forty holds lapse.
	for _, code := range codes[:20] {
		var out map[string]any
		if st := a.Post(t, "/api/orders/"+code+"/confirm", boxConfirmKey, &out); st != http.StatusOK {
			t.Fatalf("confirm %s = %d %v", code, st, out)
		}
	}
	testenv.WaitFor(t, 20*time.Second, "40 offers after 40 holds lapsed", func() bool { _, n := log.offered(); return n >= 40 })
	// A newcomer after the sell-out joins the end: it is offered nothing while the waitlist is ahead.
	late := b.Dial(t, "wl", "")
	if m, _ := late.Until(t, "queued", 5*time.Second); m.Rank != waiting-40+1 {
		t.Fatalf("a newcomer queued at rank %d, want %d (the waitlist's end)", m.Rank, waiting-40+1)
	}
	log.follow(late, waiting)
	// Ten confirmed orders are refunded: ten more seats, ten more offers.
	for _, code := range codes[:10] {
		var out map[string]any
		if st := b.Admin(t, http.MethodPost, "/orders/"+code+"/cancel", nil, &out); st != http.StatusOK {
			t.Fatalf("refund %s = %d %v", code, st, out)
		}
	}
	var fig waitlistFigures
	testenv.WaitFor(t, 10*time.Second, "50 offers", func() bool {
		a.Admin(t, http.MethodGet, "/screenings/wl", nil, &fig)
		return fig.Line.Waitlist != nil && fig.Line.Waitlist.Offered >= 50
	})
	if w := fig.Line.Waitlist; !fig.Waitlist || w.Offered != 50 || w.Offerable != 0 || w.OffersOut != 50 {
		t.Fatalf("the operator's view after 40 lapses and 10 refunds = %+v %+v; want exactly 50 offers out, none left to offer", fig, *w)
	}
	testenv.WaitFor(t, 10*time.Second, "50 offers on the sockets", func() bool { _, n := log.offered(); return n >= 50 })
	places, n := log.offered()
	if n != 50 || !slices.Equal(places, seqTo(0, 50)) {
		t.Fatalf("offers went to places %v (%d offers); want exactly one to each of the first 50", places, n)
	}
	for _, i := range places {
		if m := log.offers[i][0]; m.SeatCount() != 1 || m.Pass == "" {
			t.Fatalf("offer to place %d = %+v, want one seat and a pass", i, m)
		}
	}
	// Nobody takes them: when they lapse, the next fifty are offered, and still nobody past them.
	testenv.WaitFor(t, 20*time.Second, "the next 50 offers", func() bool { _, n := log.offered(); return n >= 100 })
	places, n = log.offered()
	if n != 100 || !slices.Equal(places, seqTo(0, 100)) {
		t.Fatalf("after the first offers lapsed, offers went to %v (%d offers); want the first 100 places, once each", places, n)
	}
	// One of the second round takes its offer: its reservation holds the seat.
	m := log.offers[60][0]
	if code, o := a.ReserveCount(t, "wl", m.Pass, 2); code != http.StatusBadRequest {
		t.Fatalf("an offer of 1 seat reserving 2 = %d %v, want 400", code, o)
	}
	if code, o := a.ReserveCount(t, "wl", m.Pass, 1); code != http.StatusCreated || o["status"] != "held" {
		t.Fatalf("an offer taken = %d %v, want a held order", code, o)
	}
	testenv.WaitFor(t, 20*time.Second, "the webhooks", func() bool {
		return h.of("waitlist.offered") == 100 && h.of("waitlist.expired") >= 50 && h.of("waitlist.taken") == 1
	})
}

// adjacent reports whether seats (a JSON array of seat ids of row A) are consecutive seats.
func adjacent(seats any) bool {
	list, _ := seats.([]any)
	var nums []int
	for _, v := range list {
		var n int
		if _, err := fmt.Sscanf(fmt.Sprint(v), "A%d", &n); err != nil {
			return false
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	for i := 1; i < len(nums); i++ {
		if nums[i] != nums[i-1]+1 {
			return false
		}
	}
	return len(nums) > 0
}

// seqTo is from, from+1, …, to-1.
func seqTo(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestAPartyOfThreeIsOfferedThreeAdjacentSeatsAndWaitsOneRoundAtMost(t *testing.T) {
	a, b := waitlistInstances(t, "party", 1, 6, "1h", "1m", "")
	// Two buyers hold every seat: A1–A2, then A3–A6.
	_, p1 := admitted(t, a, "party")
	c1, o1 := a.Reserve(t, "party", p1, "A1", "A2")
	_, p2 := admitted(t, b, "party")
	c2, o2 := b.Reserve(t, "party", p2, "A3", "A4", "A5", "A6")
	if c1 != http.StatusCreated || c2 != http.StatusCreated {
		t.Fatalf("holds = %d %v, %d %v", c1, o1, c2, o2)
	}
	// Four wait: a party of three first, then three of one.
	log := &offerLog{offers: map[int][]testenv.Message{}}
	tokens := make([]string, 4)
	for i := range tokens {
		s := []*apptest.Server{a, b}[i%2].Dial(t, "party", "")
		m, _ := s.Until(t, "queued", 5*time.Second)
		tokens[i] = m.Token
		log.follow(s, i)
	}
	var out map[string]any
	if st := a.Put(t, "/api/screenings/party/waitlist", map[string]any{"token": tokens[0], "party": 3}, &out); st != http.StatusOK {
		t.Fatalf("party of 3 = %d %v", st, out)
	}
	// Bad input changes nothing: a party over max_seats, a token not in line, a malformed body.
	for _, bad := range []struct {
		body any
		code string
	}{
		{map[string]any{"token": tokens[0], "party": 5}, "INVALID_PARTY"},
		{map[string]any{"token": tokens[0], "party": 0}, "INVALID_PARTY"},
		{map[string]any{"token": "0123456789abcdef0123456789abcdef", "party": 2}, "NOT_IN_LINE"},
		{map[string]any{"token": tokens[0], "party": 2, "extra": 1}, "BAD_REQUEST"},
		{map[string]any{"token": "nope", "party": 2}, "BAD_TOKEN"},
	} {
		var refused map[string]any
		if st := b.Put(t, "/api/screenings/party/waitlist", bad.body, &refused); st < 400 || apptest.ErrorCode(refused) != bad.code {
			t.Errorf("PUT waitlist %v = %d %v, want %s", bad.body, st, refused, bad.code)
		}
	}
	// Two seats come back: too few for the party. The seats wait one tick for it, then go to the two behind.
	if st := a.Admin(t, http.MethodPost, "/orders/"+o1["code"].(string)+"/cancel", nil, &out); st != http.StatusOK {
		t.Fatalf("cancel = %d %v", st, out)
	}
	testenv.WaitFor(t, 10*time.Second, "two offers", func() bool { _, n := log.offered(); return n >= 2 })
	if places, n := log.offered(); n != 2 || !slices.Equal(places, []int{1, 2}) {
		t.Fatalf("two seats back for a party of 3 first: offers to %v; want the two of one behind it", places)
	}
	// Four come back: the party is offered three, first; the one left goes to the last.
	if st := b.Admin(t, http.MethodPost, "/orders/"+o2["code"].(string)+"/cancel", nil, &out); st != http.StatusOK {
		t.Fatalf("cancel = %d %v", st, out)
	}
	testenv.WaitFor(t, 10*time.Second, "the party's offer", func() bool { _, n := log.offered(); return n >= 4 })
	// The sockets are on two instances, so their messages arrive in any order: an offer's round is told by
	// its expiry (one per round).
	log.mu.Lock()
	at := func(i int) string { return log.offers[i][0].ExpiresAt }
	party := log.offers[0][0]
	before, together := at(1) <= at(0) && at(2) <= at(0) && at(1) < at(0), at(0) <= at(3)
	log.mu.Unlock()
	if !before || !together || party.SeatCount() != 3 {
		t.Fatalf("offers expire at %s, %s, %s (the party: %d seats), %s; want 1 and 2 first, then the party's 3 seats no later than the one behind it",
			at(1), at(2), at(0), party.SeatCount(), at(3))
	}
	code, o := a.ReserveCount(t, "party", party.Pass, 3)
	if code != http.StatusCreated {
		t.Fatalf("the party reserves 3 = %d %v", code, o)
	}
	if got := fmt.Sprint(o["seats"]); !adjacent(o["seats"]) {
		t.Fatalf("the party's seats = %s, want three adjacent seats of row A", got)
	}
}

func TestASoldOutSaleKeepsItsSocketsOnTheWaitlistAndOffersARefund(t *testing.T) {
	a, b := waitlistInstances(t, "full", 1, 2, "1m", "1m", "")
	_, p1 := admitted(t, a, "full")
	_, p2 := admitted(t, b, "full")
	c1, o1 := a.Reserve(t, "full", p1, "A1")
	c2, o2 := b.Reserve(t, "full", p2, "A2")
	if c1 != http.StatusCreated || c2 != http.StatusCreated {
		t.Fatalf("holds = %d %v, %d %v", c1, o1, c2, o2)
	}
	// Every seat is held: one more waits, not admitted.
	w := a.Dial(t, "full", "")
	w.Until(t, "all_held", 5*time.Second)
	for _, o := range []map[string]any{o1, o2} {
		var out map[string]any
		if st := a.Post(t, "/api/orders/"+o["code"].(string)+"/confirm", boxConfirmKey, &out); st != http.StatusOK {
			t.Fatalf("confirm = %d %v", st, out)
		}
	}
	// Sold out: the waiting socket is told so and stays; a newcomer takes a place behind it.
	if m, _ := w.Until(t, "sold_out", 10*time.Second); !m.Waitlist || m.Reason != "sold_out" {
		t.Fatalf("sold_out to the waiting = %+v, want waitlist", m)
	}
	late := b.Dial(t, "full", "")
	if m := late.Next(t, 5*time.Second); m.Type != "queued" || m.Rank != 2 {
		t.Fatalf("a newcomer after the sell-out got %+v first, want queued at rank 2", m)
	}
	if m := late.Next(t, 5*time.Second); m.Type != "sold_out" || !m.Waitlist {
		t.Fatalf("then %+v, want sold_out with waitlist", m)
	}
	var state struct{ State string }
	if a.GetJSON(t, "/api/screenings/full", &state); state.State != "sold_out" {
		t.Errorf("state = %q, want sold_out", state.State)
	}
	// The operator refunds A1: the first on the waitlist is offered it, not the newcomer.
	var out map[string]any
	if st := b.Admin(t, http.MethodPost, "/orders/"+o1["code"].(string)+"/cancel", nil, &out); st != http.StatusOK {
		t.Fatalf("refund = %d %v", st, out)
	}
	m, _ := w.Until(t, "offered", 10*time.Second)
	if m.SeatCount() != 1 {
		t.Fatalf("offer = %+v, want one seat", m)
	}
	if code, o := a.Reserve(t, "full", m.Pass, "A1"); code != http.StatusCreated {
		t.Fatalf("reserve with the offer = %d %v", code, o)
	}
}
