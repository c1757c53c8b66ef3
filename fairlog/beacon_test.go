package fairlog_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/fairlog/beacontest"
)

// quicknetInfo is the League of Entropy's quicknet chain info as https://api.drand.sh/{hash}/info serves it
// (drand's v1 relay form), and two of its rounds as /public/{round} serves them.
const (
	quicknetHash = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"
	quicknetInfo = `{"public_key":"83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a","period":3,"genesis_time":1692803367,"hash":"52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971","groupHash":"f477d5c89f21a17c863a7f937c6a6d15859414d2be09cd448d4279af331c5d3e","schemeID":"bls-unchained-g1-rfc9380","metadata":{"beaconID":"quicknet"}}`
)

var quicknetRounds = []fairlog.Round{
	{Number: 1, Randomness: "1466a6cd24e327188770752f6134001c64d6efcc590ccc26b721611ad96f165a",
		Signature: "b55e7cb2d5c613ee0b2e28d6750aabbb78c39dcc96bd9d38c2c2e12198df95571de8e8e402a0cc48871c7089a2b3af4b"},
	{Number: 9367912, Randomness: "a646d1f17493408fdd89ee2ff71a0d1eab6087f23fdef7f60a2baec60436a496",
		Signature: "845091b99635a8a5f93a15cd8622fae0c7ee5307fb5b888dc67ee4fe997b5b326dbd637bd7ab39e3188fd507ea94b314"},
}

// The checks agree with drand's own chain: its chain hash from its fields, its rounds' signatures.
func TestTheQuicknetChainAndItsRoundsCheckAsDrandPublishedThem(t *testing.T) {
	info, err := fairlog.ParseChainInfo([]byte(quicknetInfo), quicknetHash)
	if err != nil {
		t.Fatalf("ParseChainInfo(quicknet) = %v", err)
	}
	if info.Period != 3*time.Second || info.Scheme != fairlog.SchemeG1Sigs || info.BeaconID != "quicknet" {
		t.Errorf("quicknet read as %+v", info)
	}
	for _, r := range quicknetRounds {
		if err := r.Check(info); err != nil {
			t.Errorf("round %d: %v", r.Number, err)
		}
		other := r
		other.Number++
		if err := other.Check(info); !errors.Is(err, fairlog.ErrBeacon) {
			t.Errorf("round %d's signature taken for round %d: %v, want ErrBeacon", r.Number, other.Number, err)
		}
	}
	if got, want := info.TimeOfRound(9367912), time.Unix(1692803367+3*(9367912-1), 0); !got.Equal(want) {
		t.Errorf("TimeOfRound = %v, want %v", got, want)
	}
	for _, bad := range []string{
		strings.Replace(quicknetInfo, `"period":3`, `"period":30`, 1),   // another chain under quicknet's hash
		strings.Replace(quicknetInfo, `"83cf0f`, `"93cf0f`, 1),          // another key
		strings.Replace(quicknetInfo, `rfc9380`, `rfc9381`, 1),          // a scheme not checked
		strings.Replace(quicknetInfo, `"quicknet"}`, `"quicknet2"}`, 1), // another beacon id
	} {
		if _, err := fairlog.ParseChainInfo([]byte(bad), quicknetHash); !errors.Is(err, fairlog.ErrBeacon) {
			t.Errorf("ParseChainInfo(%.120s…) = %v, want ErrBeacon", bad, err)
		}
	}
}

func TestTheRoundNamedIsTheFirstDueAtOrAfterTheSaleTime(t *testing.T) {
	c := fairlog.ChainInfo{GenesisTime: 1000, Period: 3 * time.Second}
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{time.Unix(900, 0), 1},
		{time.Unix(1000, 0), 1},
		{time.UnixMilli(1000_001), 2},
		{time.Unix(1003, 0), 2},
		{time.UnixMilli(1005_999), 3},
		{time.Unix(1006, 0), 3},
	} {
		got := c.FirstRoundFrom(tc.at)
		if got != tc.want {
			t.Errorf("FirstRoundFrom(%d ms) = %d, want %d", tc.at.UnixMilli(), got, tc.want)
		}
		if due := c.TimeOfRound(got); due.Before(tc.at) || (got > 1 && !c.TimeOfRound(got-1).Before(tc.at)) {
			t.Errorf("round %d is due at %v: not the first due at or after %v", got, due, tc.at)
		}
	}
}

func TestBeaconURLs(t *testing.T) {
	for _, good := range []string{"https://api.drand.sh/" + quicknetHash, "http://127.0.0.1:8080/x/" + quicknetHash + "/"} {
		if _, err := fairlog.ParseBeacon(good); err != nil {
			t.Errorf("ParseBeacon(%q) = %v", good, err)
		}
	}
	for _, bad := range []string{"", "https://api.drand.sh", "ftp://api.drand.sh/" + quicknetHash, "https://api.drand.sh/" + strings.ToUpper(quicknetHash),
		"https://api.drand.sh/" + quicknetHash + "?x=1", "https:///" + quicknetHash, "https://a b/" + quicknetHash} {
		if _, err := fairlog.ParseBeacon(bad); err == nil {
			t.Errorf("ParseBeacon(%q) accepted", bad)
		}
	}
}

// beaconSale is the records of a sale whose pre-queue mixed in round of srv: pre entries (entry 2 left),
// those from lateFrom on entered after the round was due; then the opening (order: the mixed keys, the late
// ones after by number) and a few later places.
func beaconSale(srv *beacontest.Server, pre, lateFrom int) (rs []fairlog.Record, seed []byte, round fairlog.Round) {
	seed = bytes.Repeat([]byte{9}, 32)
	r := srv.Chain.FirstRoundFrom(time.Now().Add(-5 * srv.Chain.Period))
	due := srv.Chain.TimeOfRound(r).UnixMilli()
	round = srv.Round(r)
	rs = []fairlog.Record{{Kind: fairlog.KindCommit, T: due - 5000, Seed: fairlog.SeedCommit(seed), Beacon: srv.Beacon.URL, Round: r}}
	for n := 1; n <= pre; n++ {
		at := due - 1000
		if n >= lateFrom {
			at = due + int64(n)
		}
		rs = append(rs, fairlog.Record{Kind: fairlog.KindPre, T: at, N: int64(n), H: fairlog.TokenHash(token(n))})
	}
	rs = append(rs, fairlog.Record{Kind: fairlog.KindPreGone, T: due, N: 2, Why: "left"},
		fairlog.Record{Kind: fairlog.KindReveal, T: due + 500, Seed: hex.EncodeToString(seed), Round: r, Randomness: round.Randomness, Signature: round.Signature})
	mixed := fairlog.MixSeed(seed, round.Randomness)
	var early, late []int
	for n := 1; n <= pre; n++ {
		switch {
		case n == 2:
		case n >= lateFrom:
			late = append(late, n)
		default:
			early = append(early, n)
		}
	}
	slices.SortFunc(early, func(a, b int) int {
		ka, kb := fairlog.ShuffleKey(mixed, fairlog.TokenHash(token(a))), fairlog.ShuffleKey(mixed, fairlog.TokenHash(token(b)))
		if ka < kb {
			return -1
		}
		return 1
	})
	seq := int64(0)
	for _, n := range append(early, late...) {
		seq++
		rs = append(rs, fairlog.Record{Kind: fairlog.KindPlace, T: due + 500, Seq: seq, H: fairlog.TokenHash(token(n)), N: int64(n)})
	}
	for i := range 5 {
		seq++
		rs = append(rs, fairlog.Record{Kind: fairlog.KindPlace, T: due + 600, Seq: seq, H: fairlog.TokenHash(token(1000 + i))})
	}
	return rs, seed, round
}

func TestABeaconSaleThatKeepsTheRulesPasses(t *testing.T) {
	for _, scheme := range []string{fairlog.SchemeG1Sigs, fairlog.SchemeG2Sigs} {
		t.Run(scheme, func(t *testing.T) {
			srv := beacontest.New(t, scheme, time.Second)
			rs, _, _ := beaconSale(srv, 300, 291)
			rep := fairlog.CheckWith("s", rs, map[string]fairlog.ChainInfo{srv.Beacon.URL: srv.Chain})
			if len(rep.Violations) > 0 {
				t.Fatalf("violations: %v", rep.Violations)
			}
			if !rep.Mixed || rep.Late != 10 || rep.Shuffled != 299 || rep.Beacon != srv.Beacon.URL {
				t.Errorf("report %s", rep)
			}
			for _, r := range rs {
				if got, err := fairlog.ParseRecord(r.Format()); err != nil || !bytes.Equal(got.Format(), r.Format()) {
					t.Errorf("%q read back as %+v, %v", r.Format(), got, err)
				}
			}
		})
	}
}

// Each change of a beacon sale's records breaks its rules, and the check says how.
func TestABeaconRoundTamperedWithIsCaught(t *testing.T) {
	srv := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	other := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	reveal := func(rs []fairlog.Record) *fairlog.Record {
		return &rs[slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindReveal })]
	}
	// opening is the pre-queue's places, as ordered by keys from seed (no late entries).
	reorder := func(rs []fairlog.Record, seed []byte) {
		first := slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindPlace })
		last := slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindPlace && r.N == 0 })
		places := rs[first:last]
		hs := make([]fairlog.Record, len(places))
		copy(hs, places)
		slices.SortFunc(hs, func(a, b fairlog.Record) int {
			ka, kb := fairlog.ShuffleKey(seed, a.H), fairlog.ShuffleKey(seed, b.H)
			if ka < kb {
				return -1
			}
			return 1
		})
		for i := range places {
			places[i].H, places[i].N = hs[i].H, hs[i].N
		}
	}
	cases := []struct {
		name   string
		change func(rs []fairlog.Record, seed []byte, round fairlog.Round)
		says   string
	}{
		{"a reveal of another round, genuine", func(rs []fairlog.Record, _ []byte, round fairlog.Round) {
			r := srv.Round(round.Number + 1)
			rv := reveal(rs)
			rv.Round, rv.Randomness, rv.Signature = r.Number, r.Randomness, r.Signature
		}, "but the commitment named round"},
		{"randomness that is not SHA-256 of the signature", func(rs []fairlog.Record, _ []byte, _ fairlog.Round) {
			reveal(rs).Randomness = strings.Repeat("ab", 32)
		}, "is not SHA-256 of its signature"},
		{"a round the beacon did not serve: another chain's signature", func(rs []fairlog.Record, _ []byte, round fairlog.Round) {
			r := other.Round(round.Number)
			rv := reveal(rs)
			rv.Randomness, rv.Signature = r.Randomness, r.Signature
		}, "signature is not the chain's"},
		{"the order computed without the beacon", func(rs []fairlog.Record, seed []byte, _ fairlog.Round) {
			reorder(rs, seed)
		}, "where the shuffle puts entry"},
		{"the beacon dropped from the reveal", func(rs []fairlog.Record, seed []byte, _ fairlog.Round) {
			rv := reveal(rs)
			rv.Round, rv.Randomness, rv.Signature = 0, "", ""
			reorder(rs, seed)
		}, "the reveal mixes in no round"},
		{"a late entry shuffled in", func(rs []fairlog.Record, _ []byte, _ fairlog.Round) {
			i := slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindPre && r.N == 7 })
			rs[i].T += 10_000 // entered after the round was due, yet placed among the shuffled
		}, "where the shuffle puts entry"},
		{"a round mixed in that no commitment named", func(rs []fairlog.Record, _ []byte, _ fairlog.Round) {
			rs[0].Beacon, rs[0].Round = "", 0
		}, "the commitment named no beacon round"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, seed, round := beaconSale(srv, 60, 1_000)
			c.change(rs, seed, round)
			rep := fairlog.CheckWith("s", rs, map[string]fairlog.ChainInfo{srv.Beacon.URL: srv.Chain})
			if !strings.Contains(strings.Join(rep.Violations, "\n"), c.says) {
				t.Errorf("violations %v, want one that says %q", rep.Violations, c.says)
			}
		})
	}
}

// A beacon the server could not reach is said plainly, in the commitment or the reveal, and the order is
// then the seed's alone: the check passes it and says what it proves.
func TestABeaconNotReachedIsSaidAndTheSeedAloneOrders(t *testing.T) {
	srv := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	chains := map[string]fairlog.ChainInfo{srv.Beacon.URL: srv.Chain}
	unmix := func(rs []fairlog.Record, seed []byte) []fairlog.Record {
		first := slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindPlace })
		places := slices.Clone(rs[first : first+59])
		slices.SortFunc(places, func(a, b fairlog.Record) int {
			ka, kb := fairlog.ShuffleKey(seed, a.H), fairlog.ShuffleKey(seed, b.H)
			if ka < kb {
				return -1
			}
			return 1
		})
		for i := range places {
			rs[first+i].H, rs[first+i].N = places[i].H, places[i].N
		}
		return rs
	}

	rs, seed, _ := beaconSale(srv, 60, 1_000)
	rv := slices.IndexFunc(rs, func(r fairlog.Record) bool { return r.Kind == fairlog.KindReveal })
	rs[rv].Randomness, rs[rv].Signature = fairlog.NoBeacon, ""
	rep := fairlog.CheckWith("s", unmix(rs, seed), chains)
	if len(rep.Violations) > 0 || rep.Mixed || !strings.Contains(rep.String(), "could not fetch round") {
		t.Errorf("a round not fetched at the opening: %s", rep)
	}

	rs, seed, _ = beaconSale(srv, 60, 1_000)
	rs[0].Beacon, rs[0].Round = fairlog.NoBeacon, 0
	rs[rv].Round, rs[rv].Randomness, rs[rv].Signature = 0, "", ""
	rep = fairlog.CheckWith("s", unmix(rs, seed), nil)
	if len(rep.Violations) > 0 || rep.Mixed || !strings.Contains(rep.String(), "could not reach it when it drew the seed") {
		t.Errorf("a beacon not reached at the commitment: %s", rep)
	}
}

func TestVerifyChecksTheBeaconItFetches(t *testing.T) {
	srv := beacontest.New(t, fairlog.SchemeG1Sigs, time.Second)
	key := testKey(t, "log1")
	rs, _, _ := beaconSale(srv, 200, 181)
	_, logSrv := serve(t, key, "s1", rs)
	url := logSrv.URL + "/api/screenings/s1/log/"
	rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url})
	if err != nil || len(rep.Violations) > 0 {
		t.Fatalf("Verify = %v, %v", rep, err)
	}
	if !rep.Mixed || rep.Late != 20 || !strings.Contains(rep.String(), "mixed into the seed") {
		t.Errorf("report %s", rep)
	}
	srv.Down(true)
	if _, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url}); err == nil || !strings.Contains(err.Error(), srv.Beacon.URL) {
		t.Errorf("Verify with the beacon down = %v, want an error that names it", err)
	}
}

func TestMalformedBeaconFieldsAreRefused(t *testing.T) {
	c, h := fairlog.SeedCommit([]byte("s")), fairlog.TokenHash("x")
	url := "https://api.drand.sh/" + quicknetHash
	for _, line := range []string{
		"commit t=1 seed=" + c + " beacon=" + url + "\n",          // no round
		"commit t=1 seed=" + c + " beacon=none round=3\n",         // none, with a round
		"commit t=1 seed=" + c + " beacon=" + url + "/ round=3\n", // a trailing slash
		"commit t=1 seed=" + c + " beacon=https://api.drand.sh round=3\n",
		"commit t=1 seed=" + c + " round=3\n",
		"reveal t=1 seed=" + h + " round=3\n",
		"reveal t=1 seed=" + h + " round=3 randomness=" + h + "\n",
		"reveal t=1 seed=" + h + " round=3 randomness=none signature=ab\n",
		"reveal t=1 seed=" + h + " round=0 randomness=none\n",
		"reveal t=1 seed=" + h + " round=3 randomness=" + h + " signature=ABCD\n",
		"reveal t=1 seed=" + h + " round=3 randomness=" + h + " signature=abc\n",
		"reveal t=1 seed=" + h + " round=3 randomness=" + h + " signature=" + strings.Repeat("ab", 97) + "\n",
	} {
		if _, err := fairlog.ParseRecord([]byte(line)); !errors.Is(err, fairlog.ErrBadRecord) {
			t.Errorf("ParseRecord(%.120q) = %v, want ErrBadRecord", line, err)
		}
	}
	for _, line := range []string{
		"commit t=1 seed=" + c + "\n",
		"commit t=1 seed=" + c + " beacon=none\n",
		"commit t=1 seed=" + c + " beacon=" + url + " round=3\n",
		"reveal t=1 seed=" + h + " round=3 randomness=none\n",
		"reveal t=1 seed=" + h + " round=3 randomness=" + h + " signature=" + strings.Repeat("ab", 48) + "\n",
	} {
		r, err := fairlog.ParseRecord([]byte(line))
		if err != nil || string(r.Format()) != line {
			t.Errorf("ParseRecord(%.120q) = %q, %v", line, r.Format(), err)
		}
	}
}
