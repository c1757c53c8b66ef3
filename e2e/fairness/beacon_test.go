// The beacon from outside (docs/fairness.md, "The beacon"): a sale whose server names a drand-compatible
// beacon (fairlog/beacontest, real BLS signatures) in its settings. Its pre-queue's order, checked over the
// public routes by the verifier, is the one recomputed from the seed mixed with the round the commitment
// named; with the beacon down at the opening, the line still opens, a bounded while after the round's time,
// and the log and the verifier say the round was not mixed in.

package fairness

import (
	"encoding/hex"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/fairlog/beacontest"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// beaconEarly is the beacon sales' pre-queue.
const beaconEarly = 300

// beaconSale starts the instances with srv as their beacon, creates screening id whose sale opens in a few
// seconds, fills its pre-queue, calls between (nil: nothing) once it is full, and waits for the line to
// open. It returns the log's URL, the early arrivals' tokens and how long after the sale time the line
// opened.
func beaconSale(t *testing.T, env *testenv.Env, srv *beacontest.Server, id string, between func()) (string, []string, time.Duration) {
	t.Helper()
	servers, logURL, _ := startSaleWithKey(t, env, id, map[string]string{"WAITROOM_FAIRNESS_BEACON": srv.Beacon.URL})
	// The pre-queue fills before the sale time: the sockets dial a few dozen at a time (dialUsers), and 10 s
	// leave room for a loaded machine under the race detector (300 one after the other took more than 5 s in CI).
	opens := time.Now().Add(10 * time.Second).UTC().Truncate(time.Millisecond)
	code := servers[0].Admin(t, http.MethodPost, "/screenings", map[string]any{
		"id": id, "name": "Beacon", "starts_at": opens.Add(time.Hour), "sale_opens_at": opens,
		"rows": 10, "seats_per_row": 10,
		"admission": map[string]any{"interval": "1s", "batch_size": 10, "max_active": 100, "active_ttl": "10m"},
	}, nil)
	if code != http.StatusCreated {
		t.Fatalf("POST /api/admin/screenings = %d, want 201", code)
	}
	early := dialUsers(t, servers, id, beaconEarly, "prequeue")
	tokens := make([]string, len(early))
	for i, u := range early {
		tokens[i] = u.token
		if i > 0 {
			_ = u.sock.Close()
		}
	}
	first := early[0].sock
	if time.Now().After(opens) {
		t.Fatalf("the pre-queue took past the opening to fill")
	}
	if between != nil {
		between()
	}
	if _, err := first.ReadUntil(func(m testenv.Message) bool { return m.Type == "position" || m.Type == "admitted" }, time.Until(opens)+30*time.Second); err != nil {
		t.Fatalf("the line did not open within 30 s of its sale time: %v", err)
	}
	return logURL, tokens, time.Since(opens)
}

// TestABeaconSaleVerifiesInTheMixedOrder: the verifier passes the log, the beacon's round mixed in, and the
// opening's order is the one recomputed here from the revealed seed and the round as the beacon serves it.
func TestABeaconSaleVerifiesInTheMixedOrder(t *testing.T) {
	srv := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		logURL, tokens, _ := beaconSale(t, env, srv, "beacon", nil)
		rep := verify(t, logURL, filepath.Join(t.TempDir(), "state.json"))
		if len(rep.Violations) > 0 || !rep.Mixed || rep.Shuffled != beaconEarly {
			t.Fatalf("verify-log: %s", rep)
		}
		records := readLogRecords(t, logURL)
		reveal := records[slices.IndexFunc(records, func(r fairlog.Record) bool { return r.Kind == fairlog.KindReveal })]
		if records[0].Beacon != srv.Beacon.URL || records[0].Round != reveal.Round {
			t.Errorf("the commitment %s names another round than the reveal's %d", records[0].Format(), reveal.Round)
		}
		if got := srv.Round(reveal.Round); got.Randomness != reveal.Randomness || got.Signature != reveal.Signature {
			t.Errorf("the reveal %s states round %d otherwise than the beacon serves it", reveal.Format(), reveal.Round)
		}
		seed, _ := hex.DecodeString(reveal.Seed)
		mixed := fairlog.MixSeed(seed, reveal.Randomness)
		want := make([]string, len(tokens))
		for i, tok := range tokens {
			want[i] = fairlog.TokenHash(tok)
		}
		slices.SortFunc(want, func(a, b string) int {
			ka, kb := fairlog.ShuffleKey(mixed, a), fairlog.ShuffleKey(mixed, b)
			switch {
			case ka < kb:
				return -1
			case ka > kb:
				return 1
			}
			return 0
		})
		var got []string
		for _, r := range records {
			if r.Kind == fairlog.KindPlace && r.N > 0 {
				got = append(got, r.H)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("the opening placed the pre-queue in another order than its keys from the mixed seed")
		}
	})
}

// TestABeaconDownAtTheOpeningStillOpensTheLine: the beacon stops answering once the pre-queue is full; the
// line opens all the same, within the beacon's patience (10 s) of the round's time, and the log and the
// verifier say the order is the seed's alone.
func TestABeaconDownAtTheOpeningStillOpensTheLine(t *testing.T) {
	srv := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		logURL, _, late := beaconSale(t, env, srv, "beacondown", func() { srv.Down(true) })
		srv.Down(false) // the verifier reads the chain's info
		if late > 10*time.Second+srv.Chain.Period+5*time.Second {
			t.Errorf("the line opened %v after its sale time, want within the round's period and the beacon's patience", late)
		}
		rep := verify(t, logURL, filepath.Join(t.TempDir(), "state.json"))
		if len(rep.Violations) > 0 || rep.Mixed || !strings.Contains(rep.String(), "could not fetch round") {
			t.Fatalf("verify-log: %s", rep)
		}
		records := readLogRecords(t, logURL)
		reveal := records[slices.IndexFunc(records, func(r fairlog.Record) bool { return r.Kind == fairlog.KindReveal })]
		if reveal.Randomness != fairlog.NoBeacon || reveal.Round != records[0].Round {
			t.Errorf("the reveal %s, want the committed round with randomness=%s", reveal.Format(), fairlog.NoBeacon)
		}
	})
}

// readLogRecords reads the whole log through its records route.
func readLogRecords(t *testing.T, logURL string) []fairlog.Record {
	t.Helper()
	base, id, _ := strings.Cut(strings.TrimSuffix(logURL, "/log/"), "/api/screenings/")
	return readRecords(t, &apptest.Server{URL: base}, id)
}
