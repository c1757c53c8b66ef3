package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// waitlisted returns a queue whose screening sold out with n waiting, its line kept as a waitlist, and the
// tokens in line order.
func waitlisted(t *testing.T, env *testenv.Env, n int) (*queue.Queue, []string) {
	t.Helper()
	q := queue.New(env.Redis, env.Prefix)
	tokens := registerN(t, q, screening, n)
	if _, err := q.SellOut(t.Context(), screening, true); err != nil {
		t.Fatal(err)
	}
	return q, tokens
}

// offerSettings is a pace for offer rounds: a large batch, and offers lasting a minute.
func offerSettings() queue.Settings {
	s := settings(100, 1000)
	s.OfferTTL = time.Minute
	s.Waitlist = true
	return s
}

// rankOf checks that the instance's view of the line (read whole) ranks every waiting token as Redis does.
func checkRanks(t *testing.T, env *testenv.Env, q *queue.Queue) {
	t.Helper()
	line, err := q.Line(t.Context(), screening)
	if err != nil {
		t.Fatal(err)
	}
	for i, z := range members(t, env, screening, "waiting") {
		if r, ok := line.Rank(int64(z.Score)); !ok || r != int64(i) {
			t.Fatalf("rank of seq %v = %d, %v; want %d (line %+v)", z.Score, r, ok, i, line)
		}
	}
}

func TestASoldOutLineStaysAsAWaitlistAndOffersWhatComesBackInOrder(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q, tokens := waitlisted(t, env, 10)
		ctx := t.Context()
		if n := zcard(t, env, screening, "waiting"); n != 10 {
			t.Fatalf("waiting after the sell-out = %d, want 10 (kept)", n)
		}
		// A newcomer joins the waitlist's end.
		late, err := q.Register(ctx, screening, "")
		if err != nil || late.State != queue.Waiting || !late.Waitlisted || late.ZeroBasedRank != 10 {
			t.Fatalf("Register after the sell-out = %+v, %v; want waiting 11th, waitlisted", late, err)
		}
		tokens = append(tokens, late.Token)
		st := offerSettings()
		now := time.Now()
		if r, err := q.Admit(ctx, screening, now, st); err != nil || r.Skip != queue.NoValidScreening {
			t.Fatalf("Admit while sold out = %+v, %v; want %s", r, err, queue.NoValidScreening)
		}
		// Three seats come back: exactly three offers, to the first three, each of one seat.
		if _, err := q.Reopen(ctx, screening, true, 3, -1); err != nil {
			t.Fatal(err)
		}
		r, err := q.Admit(ctx, screening, now, st)
		if err != nil || !slices.Equal(r.Admitted, tokens[:3]) || !slices.Equal(r.Offers, []int{1, 1, 1}) {
			t.Fatalf("Admit after 3 came back = %v %v, %v; want %v offered one seat each", r.Admitted, r.Offers, err, tokens[:3])
		}
		if want := now.Add(st.OfferTTL).UnixMilli(); r.ExpiresAt.UnixMilli() != want {
			t.Fatalf("offers expire at %v, want now + offer_ttl", r.ExpiresAt)
		}
		if r, err := q.Admit(ctx, screening, now.Add(time.Second), st); err != nil || r.Skip != queue.NoSeatsBack {
			t.Fatalf("a second round with nothing back = %+v, %v; want %s", r, err, queue.NoSeatsBack)
		}
		checkRanks(t, env, q)
		// The first takes its offer; the other two lapse: their seats go to the next two, and nobody else.
		p := pass.NewSecretIssuer(secret)
		if err := q.FinishSeats(ctx, passOf(t, p, screening, tokens[0], r.ExpiresAt), 1); err != nil {
			t.Fatal(err)
		}
		later := r.ExpiresAt.Add(time.Millisecond)
		r2, err := q.Admit(ctx, screening, later, st)
		if err != nil || !slices.Equal(r2.Admitted, tokens[3:5]) {
			t.Fatalf("Admit after two offers lapsed = %v, %v; want %v", r2.Admitted, err, tokens[3:5])
		}
		news, err := q.TakeOfferNews(ctx, screening, 100)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, n := range news {
			kinds[n.Kind]++
		}
		if kinds["offered"] != 5 || kinds["taken"] != 1 || kinds["expired"] != 2 {
			t.Fatalf("offer news = %v; want 5 offered, 1 taken, 2 expired", kinds)
		}
		f, err := q.Waitlist(ctx, screening)
		if err != nil || !f.On || f.Offered != 5 || f.Taken != 1 || f.Expired != 2 || f.OffersOut != 2 || f.Offerable != 0 || f.Length != 6 {
			t.Fatalf("Waitlist = %+v, %v", f, err)
		}
		checkRanks(t, env, q)
	})
}

func TestAnOfferTakenForFewerSeatsGivesTheRestBack(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q, tokens := waitlisted(t, env, 3)
		ctx := t.Context()
		if err := q.SetParty(ctx, screening, tokens[0], 3); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Reopen(ctx, screening, true, 3, -1); err != nil {
			t.Fatal(err)
		}
		st := offerSettings()
		r, err := q.Admit(ctx, screening, time.Now(), st)
		if err != nil || !slices.Equal(r.Admitted, tokens[:1]) || !slices.Equal(r.Offers, []int{3}) {
			t.Fatalf("Admit = %v %v, %v; want the party of 3 offered 3", r.Admitted, r.Offers, err)
		}
		if err := q.KeepOrderSlot(ctx, passOf(t, pass.NewSecretIssuer(secret), screening, tokens[0], r.ExpiresAt), r.ExpiresAt.Add(time.Minute), 2); err != nil {
			t.Fatal(err)
		}
		r, err = q.Admit(ctx, screening, time.Now(), st)
		if err != nil || !slices.Equal(r.Admitted, tokens[1:2]) {
			t.Fatalf("Admit after an offer of 3 took 2 = %v, %v; want the next offered the one left", r.Admitted, err)
		}
	})
}

// The party rule (docs/protocol.md 5.4): a party that does not fit what came back keeps its place; the
// seats wait for it until the end of the first tick that found it first and not fitting, then go to the
// parties behind it that fit; it is offered first once enough are back.
func TestALargePartyHoldsTheSeatsOneTickThenLetsSmallerPartiesBy(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q, tokens := waitlisted(t, env, 5)
		ctx := t.Context()
		if err := q.SetParty(ctx, screening, tokens[0], 3); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Reopen(ctx, screening, true, 2, -1); err != nil {
			t.Fatal(err)
		}
		st := offerSettings()
		now := time.Now()
		if r, err := q.Admit(ctx, screening, now, st); err != nil || r.Skip != queue.NoSeatsBack || len(r.Admitted) != 0 {
			t.Fatalf("first round, 2 back for a party of 3 = %+v, %v; want nobody offered (the seats wait a tick)", r, err)
		}
		r, err := q.Admit(ctx, screening, now.Add(time.Second), st)
		if err != nil || !slices.Equal(r.Admitted, tokens[1:3]) {
			t.Fatalf("second round = %v, %v; want the two behind the party offered", r.Admitted, err)
		}
		checkRanks(t, env, q)
		if _, err := q.Reopen(ctx, screening, true, 3, -1); err != nil {
			t.Fatal(err)
		}
		r, err = q.Admit(ctx, screening, now.Add(2*time.Second), st)
		if err != nil || !slices.Equal(r.Admitted, tokens[:1]) || !slices.Equal(r.Offers, []int{3}) {
			t.Fatalf("three back = %v %v, %v; want the party of 3 offered first", r.Admitted, r.Offers, err)
		}
		checkRanks(t, env, q)
	})
}

func TestAPartyIsSetOnlyForAWaitingToken(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q, tokens := waitlisted(t, env, 1)
		if err := q.SetParty(t.Context(), screening, queue.NewToken(), 2); !errors.Is(err, queue.ErrNotWaiting) {
			t.Fatalf("SetParty of a token not waiting = %v, want ErrNotWaiting", err)
		}
		if err := q.SetParty(t.Context(), screening, "not a token", 2); !errors.Is(err, queue.ErrBadToken) {
			t.Fatalf("SetParty of a malformed token = %v, want ErrBadToken", err)
		}
		if n, err := q.Party(t.Context(), screening, tokens[0]); err != nil || n != 1 {
			t.Fatalf("Party = %d, %v; want 1", n, err)
		}
	})
}

func TestAnOperatorsCloseStillDropsAWaitlist(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q, _ := waitlisted(t, env, 4)
		if err := q.CloseSale(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		if n := zcard(t, env, screening, "waiting"); n != 0 {
			t.Fatalf("waiting after the operator's close = %d, want 0", n)
		}
		if _, err := q.Register(t.Context(), screening, ""); !errors.Is(err, queue.ErrClosed) {
			t.Fatalf("Register after the close = %v, want ErrClosed", err)
		}
	})
}

// The seats to offer never exceed those available less those the offers out promise: a seat a buyer admitted
// before the sell-out took meanwhile is not offered, and an offer that lapses while every seat is held gives
// nothing back.
func TestTheSeatsToOfferAreBoundByThoseAvailable(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q, tokens := waitlisted(t, env, 6)
		ctx := t.Context()
		st := offerSettings()
		now := time.Now()
		if _, err := q.Reopen(ctx, screening, true, 2, 2); err != nil {
			t.Fatal(err)
		}
		r, err := q.Admit(ctx, screening, now, st)
		if err != nil || !slices.Equal(r.Admitted, tokens[:2]) {
			t.Fatalf("2 back, 2 available = %v, %v; want 2 offers", r.Admitted, err)
		}
		// Three more come back, but the database counts 3 available in all: 2 are promised to the offers out.
		if _, err := q.Reopen(ctx, screening, true, 3, 3); err != nil {
			t.Fatal(err)
		}
		if r, err = q.Admit(ctx, screening, now.Add(time.Second), st); err != nil || !slices.Equal(r.Admitted, tokens[2:3]) {
			t.Fatalf("3 back, 3 available, 2 promised = %v, %v; want one offer", r.Admitted, err)
		}
		// Every seat is held now (others took them): the offers that lapse give nothing back.
		if err := q.AllHeld(ctx, screening, true); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Reopen(ctx, screening, true, 1, 1); err != nil { // one comes back: it is offered
			t.Fatal(err)
		}
		later := r.ExpiresAt.Add(time.Millisecond)
		if r, err = q.Admit(ctx, screening, later, st); err != nil || len(r.Admitted) != 1 {
			t.Fatalf("one back after the lapses = %v, %v; want exactly one offer (the three lapsed gave back none beyond it)", r.Admitted, err)
		}
	})
}

// A token that left an e-mail address (Keep) is not dropped as abandoned while its page is closed: it is told
// by e-mail. One that did not is dropped at the grace, as before; Keep(false) undoes it.
func TestATokenKeptForAnEmailIsNotAbandoned(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		newClock(q, t0)
		tokens := registerN(t, q, screening, 3)
		ctx := t.Context()
		if err := q.Keep(ctx, screening, tokens[1], true); err != nil {
			t.Fatal(err)
		}
		if err := q.Keep(ctx, screening, "not a token", true); !errors.Is(err, queue.ErrBadToken) {
			t.Fatalf("Keep of a malformed token = %v, want ErrBadToken", err)
		}
		for _, tok := range tokens {
			if err := q.Disconnected(ctx, screening, tok); err != nil {
				t.Fatal(err)
			}
		}
		st := withGrace(settings(1, 1), grace)
		st.ActiveTTL = time.Hour
		r, err := q.Admit(ctx, screening, t0.Add(grace), st)
		if err != nil {
			t.Fatal(err)
		}
		if r.Abandoned != 2 || !slices.Equal(r.Admitted, tokens[1:2]) {
			t.Fatalf("tick at the grace dropped %d and admitted %v, want 2 dropped (all but the one kept) and the kept one admitted", r.Abandoned, r.Admitted)
		}
		kept, err := q.Kept(ctx, screening, tokens)
		if err != nil || !slices.Equal(kept, []bool{false, true, false}) {
			t.Fatalf("Kept = %v, %v", kept, err)
		}
	})
}
