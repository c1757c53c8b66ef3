package queue_test

import (
	"encoding/hex"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/fairlog/beacontest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// beaconQueue is a queue that keeps the log and mixes srv's rounds into its pre-queues, with its metrics.
func beaconQueue(t *testing.T, env *testenv.Env, srv *beacontest.Server) (*queue.Queue, *queue.Metrics) {
	q := queue.New(env.Redis, env.Prefix)
	q.SetLog(true)
	m := queue.NewMetrics(prometheus.NewRegistry())
	q.SetMetrics(m)
	q.SetBeacon(srv.Beacon, &http.Client{Timeout: time.Second}, slog.New(slog.DiscardHandler))
	return q, m
}

// logRecords reads the screening's log from Redis, parsed.
func logRecords(t *testing.T, q *queue.Queue, screening string) []fairlog.Record {
	t.Helper()
	recs, err := q.LogRecords(t.Context(), screening, "", 100000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]fairlog.Record, len(recs))
	for i, r := range recs {
		if out[i], err = fairlog.ParseRecord([]byte(r.Text + "\n")); err != nil {
			t.Fatalf("fairlog cannot read %q: %v", r.Text, err)
		}
	}
	return out
}

// openedOrder is the tokens' hashes in the order the opening placed them.
func openedOrder(rs []fairlog.Record) []string {
	var out []string
	for _, r := range rs {
		if r.Kind == fairlog.KindPlace && r.N > 0 {
			out = append(out, r.H)
		}
	}
	return out
}

// sortedBy is the tokens' hashes in increasing order of their keys from seed.
func sortedBy(seed []byte, tokens []string) []string {
	hs := make([]string, len(tokens))
	for i, tok := range tokens {
		hs[i] = fairlog.TokenHash(tok)
	}
	slices.SortFunc(hs, func(a, b string) int {
		ka, kb := fairlog.ShuffleKey(seed, a), fairlog.ShuffleKey(seed, b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return hs
}

// TestABeaconRoundOrdersThePreQueue: with a beacon, the commitment names the first round due at or after
// the sale time; the opening waits for it, mixes it into the seed, and places the entries that came before
// it was due in the order of their keys from the mixed seed, those that came after it behind them, in the
// order they came. The log says so, and fairlog's check recomputes the same order.
func TestABeaconRoundOrdersThePreQueue(t *testing.T) {
	srv := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q, _ := beaconQueue(t, env, srv)
		fetchedBefore := srv.Fetches()
		// The early arrivals must all come before the round is due: 300 registrations take well under a
		// second even under the race detector on a loaded machine, so 4 s leave room to spare.
		opensAt := time.Now().Add(4 * time.Second)
		round := srv.Chain.FirstRoundFrom(opensAt)
		due := srv.Chain.TimeOfRound(round)
		early := enterN(t, q, screening, opensAt, 300)
		if time.Now().After(due) {
			t.Fatalf("300 arrivals took past the round's time (%v): the test's margin is too short for this machine", due)
		}
		time.Sleep(time.Until(due) + 50*time.Millisecond)
		late := enterN(t, q, screening, opensAt, 3) // the line waits for the round: they join the pre-queue, late
		if n := srv.Fetches() - fetchedBefore; n != 0 {
			t.Errorf("the beacon was asked for %d rounds before the opening, want none", n)
		}
		o, err := q.Open(t.Context(), screening, opensAt, settings(10, 100))
		if err != nil || !o.Opened || !o.Mixed || o.Round != round || o.Shuffled != 303 {
			t.Fatalf("Open = %+v, %v; want opened with round %d mixed in, 303 places", o, err, round)
		}

		rs := logRecords(t, q, screening)
		commit, reveal := rs[0], rs[slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindReveal })]
		if commit.Kind != fairlog.KindCommit || commit.Beacon != srv.Beacon.URL || commit.Round != round {
			t.Errorf("the commitment = %s, want beacon=%s round=%d", commit.Format(), srv.Beacon.URL, round)
		}
		want := srv.Round(round)
		if reveal.Round != round || reveal.Randomness != want.Randomness || reveal.Signature != want.Signature {
			t.Errorf("the reveal = %s, want round %d as the beacon serves it", reveal.Format(), round)
		}
		seed, _ := hex.DecodeString(reveal.Seed)
		mixedOrder := append(sortedBy(fairlog.MixSeed(seed, want.Randomness), early), fairlog.TokenHash(late[0]), fairlog.TokenHash(late[1]), fairlog.TokenHash(late[2]))
		if got := openedOrder(rs); !slices.Equal(got, mixedOrder) {
			t.Errorf("the opening placed %d entries, not in the order of their keys from the mixed seed then the late ones", len(got))
		}
		if slices.Equal(sortedBy(seed, early), mixedOrder[:300]) {
			t.Error("the mixed order is the seed's own")
		}
		rep := fairlog.CheckWith(screening, rs, map[string]fairlog.ChainInfo{srv.Beacon.URL: srv.Chain})
		if len(rep.Violations) > 0 || !rep.Mixed || rep.Late != 3 {
			t.Errorf("the check of the log: %s", rep)
		}
		// The line is open: a second Open neither asks the beacon again nor changes anything.
		fetched := srv.Fetches()
		if o, err := q.Open(t.Context(), screening, opensAt, settings(10, 100)); err != nil || o.Opened || srv.Fetches() != fetched {
			t.Errorf("Open again = %+v, %v, %d more rounds asked; want nothing", o, err, srv.Fetches()-fetched)
		}
	})
}

// TestABeaconDownStillLetsTheLineOpen: a beacon that cannot be reached when the seed is drawn leaves the
// commitment without a round (beacon=none); one that cannot be reached at the opening holds the line up
// only the patience after the round's time, then the seed alone orders the pre-queue (randomness=none).
// Both are counted, and fairlog's check passes the log and says what it proves.
func TestABeaconDownStillLetsTheLineOpen(t *testing.T) {
	srv := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		chains := map[string]fairlog.ChainInfo{srv.Beacon.URL: srv.Chain}

		// Down when the seed is drawn.
		srv.Down(true)
		q, m := beaconQueue(t, env, srv)
		opensAt := time.Now().Add(time.Second)
		early := enterN(t, q, "down-at-commit", opensAt, 20)
		srv.Down(false)
		if o, err := q.Open(t.Context(), "down-at-commit", opensAt, settings(10, 100)); err != nil || !o.Opened || o.Round != 0 {
			t.Fatalf("Open = %+v, %v", o, err)
		}
		rs := logRecords(t, q, "down-at-commit")
		if rs[0].Beacon != fairlog.NoBeacon || rs[0].Round != 0 {
			t.Errorf("the commitment = %s, want beacon=%s", rs[0].Format(), fairlog.NoBeacon)
		}
		seed := revealedSeed(t, rs)
		if got := openedOrder(rs); !slices.Equal(got, sortedBy(seed, early)) {
			t.Error("the opening is not in the seed's order")
		}
		rep := fairlog.CheckWith("down-at-commit", rs, chains)
		if len(rep.Violations) > 0 || rep.Mixed || !strings.Contains(rep.String(), "could not reach it when it drew the seed") {
			t.Errorf("the check of the log: %s", rep)
		}
		if n := testutil.ToFloat64(m.BeaconMisses.WithLabelValues("down-at-commit", "commit")); n != 1 {
			t.Errorf("beacon misses at the commitment = %v, want 1", n)
		}

		// Down at the opening.
		q, m = beaconQueue(t, env, srv)
		patience := 1500 * time.Millisecond
		queue.SetBeaconPatience(q, patience)
		opensAt = time.Now().Add(time.Second)
		round := srv.Chain.FirstRoundFrom(opensAt)
		early = enterN(t, q, "down-at-open", opensAt, 20)
		srv.Down(true)
		defer srv.Down(false)
		o, err := q.Open(t.Context(), "down-at-open", opensAt, settings(10, 100))
		if err != nil || !o.Opened || o.Mixed || o.Round != round || o.Shuffled != 20 {
			t.Fatalf("Open = %+v, %v; want opened without round %d", o, err, round)
		}
		if late := time.Since(srv.Chain.TimeOfRound(round)); late > patience+3*time.Second {
			t.Errorf("the line opened %v after the round's time, want within the patience %v (and a fetch)", late, patience)
		}
		rs = logRecords(t, q, "down-at-open")
		reveal := rs[slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindReveal })]
		if reveal.Round != round || reveal.Randomness != fairlog.NoBeacon {
			t.Errorf("the reveal = %s, want round=%d randomness=%s", reveal.Format(), round, fairlog.NoBeacon)
		}
		if got := openedOrder(rs); !slices.Equal(got, sortedBy(revealedSeed(t, rs), early)) {
			t.Error("the opening is not in the seed's order")
		}
		rep = fairlog.CheckWith("down-at-open", rs, chains)
		if len(rep.Violations) > 0 || rep.Mixed || !strings.Contains(rep.String(), "could not fetch round") {
			t.Errorf("the check of the log: %s", rep)
		}
		if n := testutil.ToFloat64(m.BeaconMisses.WithLabelValues("down-at-open", "open")); n != 1 {
			t.Errorf("beacon misses at the opening = %v, want 1", n)
		}
	})
}

func revealedSeed(t *testing.T, rs []fairlog.Record) []byte {
	t.Helper()
	i := slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindReveal })
	if i < 0 {
		t.Fatal("no reveal in the log")
	}
	seed, _ := hex.DecodeString(rs[i].Seed)
	return seed
}

// TestAnEntryBetweenTheReadAndTheOpeningIsNotLeftOut: an arrival that came before the round was due but
// reached Redis after the opening read the pre-queue makes open.lua refuse; the opening reads again, and
// the arrival takes its place among the shuffled, where the mixed keys put it.
func TestAnEntryBetweenTheReadAndTheOpeningIsNotLeftOut(t *testing.T) {
	srv := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q, _ := beaconQueue(t, env, srv)
		clk := newClock(q, time.Now())
		opensAt := time.Now().Add(500 * time.Millisecond)
		early := enterN(t, q, screening, opensAt, 30)
		var slipped string
		tries := 0
		queue.BeforeOpen(q, func(try int) {
			tries = try
			if try == 1 {
				clk.Set(opensAt.Add(-time.Millisecond)) // before the round was due
				slipped = enterN(t, q, screening, opensAt, 1)[0]
				clk.Set(time.Now())
			}
		})
		o, err := q.Open(t.Context(), screening, opensAt, settings(10, 100))
		if err != nil || !o.Opened || !o.Mixed || o.Shuffled != 31 || tries != 2 {
			t.Fatalf("Open = %+v, %v after %d tries; want 31 placed, the round mixed in, at the second try", o, err, tries)
		}
		rs := logRecords(t, q, screening)
		want := sortedBy(fairlog.MixSeed(revealedSeed(t, rs), srv.Round(o.Round).Randomness), append(early, slipped))
		if got := openedOrder(rs); !slices.Equal(got, want) {
			t.Error("the opening is not the 31 entries in the order of their mixed keys")
		}
		if rep := fairlog.CheckWith(screening, rs, map[string]fairlog.ChainInfo{srv.Beacon.URL: srv.Chain}); len(rep.Violations) > 0 || rep.Late != 0 {
			t.Errorf("the check of the log: %s", rep)
		}
	})
}
