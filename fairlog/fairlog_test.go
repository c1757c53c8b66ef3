package fairlog_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/waitroom/waitroom/fairlog"
)

// maxActive is the synthetic sales' max_active: no slot is ever freed in them.
const maxActive = 1_000_000

// token is the n-th made-up token of a test.
func token(n int) string { return fmt.Sprintf("%032x", n) }

// sale makes the records of a sale that keeps every rule: a pre-queue of pre entries (two given up), the
// opening in key order, later places, ticks within the pace, a refill, leaves, a pause, a pace change, a
// direct admission once nobody waits, and the close.
func sale(pre, later int) []fairlog.Record {
	seed := bytes.Repeat([]byte{7}, 32)
	rs := []fairlog.Record{{Kind: fairlog.KindCommit, T: 1, Seed: fairlog.SeedCommit(seed)}}
	for n := 1; n <= pre; n++ {
		rs = append(rs, fairlog.Record{Kind: fairlog.KindPre, T: 2, N: int64(n), H: fairlog.TokenHash(token(n))})
	}
	rs = append(rs, fairlog.Record{Kind: fairlog.KindPreGone, T: 3, N: 2, Why: "left"}, fairlog.Record{Kind: fairlog.KindPreGone, T: 4, N: 3, Why: "abandoned"})
	rs = append(rs, fairlog.Record{Kind: fairlog.KindReveal, T: 5, Seed: hex.EncodeToString(seed)})
	var stay []int
	for n := 1; n <= pre; n++ {
		if n != 2 && n != 3 {
			stay = append(stay, n)
		}
	}
	sort.Slice(stay, func(i, j int) bool {
		return fairlog.ShuffleKey(seed, fairlog.TokenHash(token(stay[i]))) < fairlog.ShuffleKey(seed, fairlog.TokenHash(token(stay[j])))
	})
	seq := int64(0)
	for _, n := range stay {
		seq++
		rs = append(rs, fairlog.Record{Kind: fairlog.KindPlace, T: 5, Seq: seq, H: fairlog.TokenHash(token(n)), N: int64(n)})
	}
	for i := 0; i < later; i++ {
		seq++
		rs = append(rs, fairlog.Record{Kind: fairlog.KindPlace, T: 6, Seq: seq, H: fairlog.TokenHash(token(1000 + i))})
	}
	rs = append(rs, fairlog.Record{Kind: fairlog.KindPace, T: 7, Interval: 1000, Batch: 10, Max: maxActive})
	// Place 12 leaves; the rest are admitted ten a tick, a refill of 3 among them.
	rs = append(rs, fairlog.Record{Kind: fairlog.KindGone, T: 7, Seq: 12, Why: "left"})
	next, active := int64(1), int64(0)
	admit := func(via string, k int64) {
		var seqs []int64
		for int64(len(seqs)) < k && next <= seq {
			if next != 12 {
				seqs = append(seqs, next)
			}
			next++
		}
		if len(seqs) == 0 {
			return
		}
		active += int64(len(seqs))
		rs = append(rs, fairlog.Record{Kind: fairlog.KindAdmit, T: 8, Via: via, Seqs: seqs, Batch: 10, Max: maxActive, Active: active})
	}
	admit("tick", 10)
	rs = append(rs, fairlog.Record{Kind: fairlog.KindPause, T: 9}, fairlog.Record{Kind: fairlog.KindResume, T: 10})
	admit("refill", 3)
	for next <= seq {
		admit("tick", 10)
	}
	rs = append(rs, fairlog.Record{Kind: fairlog.KindDirect, T: 11, H: fairlog.TokenHash(token(99999)), Max: maxActive, Active: active + 1},
		fairlog.Record{Kind: fairlog.KindClose, T: 12, Why: "sold_out"}, fairlog.Record{Kind: fairlog.KindReopen, T: 13})
	return rs
}

func TestASaleThatKeepsTheRulesPasses(t *testing.T) {
	rep := fairlog.Check("s", sale(40, 200))
	if len(rep.Violations) > 0 {
		t.Fatalf("violations: %v", rep.Violations)
	}
	if rep.Places != 238 || rep.Shuffled != 38 || rep.Entries != 40 || rep.Admitted != 237 || rep.GivenUp != 1 || rep.Direct != 1 {
		t.Errorf("report %s", rep)
	}
}

// Each change breaks one rule, and the check says which.
func TestEachBrokenRuleIsCaught(t *testing.T) {
	find := func(rs []fairlog.Record, kind string, nth int) int {
		for i, r := range rs {
			if r.Kind == kind {
				if nth == 0 {
					return i
				}
				nth--
			}
		}
		t.Fatalf("no %s #%d", kind, nth)
		return 0
	}
	cases := []struct {
		name   string
		change func(rs []fairlog.Record) []fairlog.Record
		says   string
	}{
		{"two admissions swapped", func(rs []fairlog.Record) []fairlog.Record {
			i, j := find(rs, fairlog.KindAdmit, 0), find(rs, fairlog.KindAdmit, 1)
			rs[i].Seqs, rs[j].Seqs = rs[j].Seqs, rs[i].Seqs
			return rs
		}, "still waits"},
		{"an admission out of sequence", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindAdmit, 0)
			return slices.Insert(rs, i, fairlog.Record{Kind: fairlog.KindAdmit, T: 8, Via: "tick", Seqs: []int64{200}, Batch: 10, Max: maxActive, Active: 1})
		}, "place 200 admitted while place 1, lower, still waits"},
		{"a place admitted with no record", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindAdmit, 0)
			rs[i].Seqs = append(rs[i].Seqs[:9:9], 5000)
			return rs
		}, "no record gave it"},
		{"a place admitted twice", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindAdmit, 1)
			rs[i].Seqs = append([]int64{1}, rs[i].Seqs...)
			return rs
		}, "admitted twice"},
		{"a place admitted after it left", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindAdmit, 1)
			rs[i].Seqs = append([]int64{12}, rs[i].Seqs...)
			return rs
		}, "after it was given up"},
		{"an admission while paused", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindResume, 0)
			rs[i], rs[i+1] = rs[i+1], rs[i]
			return rs
		}, "while paused"},
		{"an admission while closed", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindAdmit, 2)
			return slices.Insert(rs, i, fairlog.Record{Kind: fairlog.KindClose, T: 8, Why: "closed"})
		}, "while closed"},
		{"a tick over its batch", func(rs []fairlog.Record) []fairlog.Record {
			rs[find(rs, fairlog.KindAdmit, 0)].Batch = 5
			return rs
		}, "more than its batch"},
		{"more admitted than max_active", func(rs []fairlog.Record) []fairlog.Record {
			rs[find(rs, fairlog.KindAdmit, 0)].Active = maxActive + 1
			return rs
		}, "more than max_active"},
		{"an admission with another pace than the one in force", func(rs []fairlog.Record) []fairlog.Record {
			rs[find(rs, fairlog.KindPace, 0)].Batch = 20
			return rs
		}, "the pace in force"},
		{"a direct admission while places wait", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindDirect, 0)
			d := rs[i]
			rs = slices.Delete(rs, i, i+1)
			return slices.Insert(rs, find(rs, fairlog.KindAdmit, 0), d)
		}, "direct admission while place"},
		{"a gap in the places", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindPlace, 45)
			rs[i].Seq++
			return rs
		}, "places are numbered 1, 2, 3"},
		{"the shuffle not in key order", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindPlace, 0)
			rs[i].N, rs[i+1].N = rs[i+1].N, rs[i].N
			rs[i].H, rs[i+1].H = rs[i+1].H, rs[i].H
			return rs
		}, "where the shuffle puts entry"},
		{"an entry the opening left out", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindPlace, 37) // the opening's last place
			rs = slices.Delete(rs, i, i+1)
			for j := i; j < len(rs); j++ {
				if rs[j].Kind == fairlog.KindPlace {
					rs[j].Seq--
				}
			}
			return rs
		}, "the opening placed 37 of the 38"},
		{"an entry given up but placed", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindPlace, 0)
			rs[i].N, rs[i].H = 2, fairlog.TokenHash(token(2))
			return rs
		}, "not waiting in the pre-queue"},
		{"a seed that does not match its commitment", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindReveal, 0)
			rs[i].Seed = strings.Repeat("08", 32)
			return rs
		}, "the revealed seed's SHA-256"},
		{"an entry after the opening", func(rs []fairlog.Record) []fairlog.Record {
			return slices.Insert(rs, find(rs, fairlog.KindPace, 0), fairlog.Record{Kind: fairlog.KindPre, T: 6, N: 41, H: fairlog.TokenHash(token(41))})
		}, "a pre-queue entry after the opening"},
		{"a place before the opening", func(rs []fairlog.Record) []fairlog.Record {
			i := find(rs, fairlog.KindReveal, 0)
			return slices.Insert(rs, i, fairlog.Record{Kind: fairlog.KindPlace, T: 5, Seq: 1, H: fairlog.TokenHash(token(5000))})
		}, "a place before the opening"},
		{"a second commit", func(rs []fairlog.Record) []fairlog.Record {
			return slices.Insert(rs, 3, rs[0])
		}, "a seed committed after the log began"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := fairlog.Check("s", c.change(sale(40, 200)))
			if !strings.Contains(strings.Join(rep.Violations, "\n"), c.says) {
				t.Errorf("violations %v, want one that says %q", rep.Violations, c.says)
			}
		})
	}
}

func TestARecordReadsBackAsItWasWritten(t *testing.T) {
	for _, r := range sale(5, 5) {
		line := r.Format()
		got, err := fairlog.ParseRecord(line)
		if err != nil {
			t.Fatalf("ParseRecord(%q) = %v", line, err)
		}
		if !bytes.Equal(got.Format(), line) {
			t.Errorf("%q read back as %q", line, got.Format())
		}
	}
	if got := fairlog.FormatSeqs([]int64{1, 2, 3, 5, 7, 8}); got != "1-3,5,7-8" {
		t.Errorf("FormatSeqs = %q", got)
	}
}

func TestMalformedRecordsAreRefused(t *testing.T) {
	h := fairlog.TokenHash("x")
	for _, line := range []string{
		"",
		"place t=1 seq=1 h=" + h,                         // no newline
		"place t=1 seq=1 h=" + h + "\r\n",                // a carriage return
		"place seq=1 t=1 h=" + h + "\n",                  // fields out of order
		"place t=1  seq=1 h=" + h + "\n",                 // two spaces
		"place t=1 seq=0 h=" + h + "\n",                  // places start at 1
		"place t=01 seq=1 h=" + h + "\n",                 // a leading zero
		"place t=-1 seq=1 h=" + h + "\n",                 // a sign
		"place t=1 seq=1 h=" + strings.ToUpper(h) + "\n", // upper-case hex
		"place t=1 seq=1 h=abc\n",
		"place t=1 seq=1 h=" + h + " n=1 x=2\n",
		"admit t=1 via=tick seqs=3-2 batch=1 max=1 active=1\n",
		"admit t=1 via=tick seqs=1-3,3 batch=1 max=1 active=1\n",
		"admit t=1 via=tick seqs=1-3,4 batch=1 max=1 active=1\n", // touching ranges: not as written
		"admit t=1 via=tick seqs=2-2 batch=1 max=1 active=1\n",
		"admit t=1 via=tick seqs=1-2000000 batch=1 max=1 active=1\n",
		"admit t=1 via=soon seqs=1 batch=1 max=1 active=1\n",
		"gone t=1 seq=1 why=bored\n",
		"hello t=1\n",
		"pause t=1 " + strings.Repeat("x", 5000) + "\n",
	} {
		if _, err := fairlog.ParseRecord([]byte(line)); !errors.Is(err, fairlog.ErrBadRecord) {
			t.Errorf("ParseRecord(%.80q) = %v, want ErrBadRecord", line, err)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	for _, r := range sale(4, 4) {
		f.Add(r.Format())
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := fairlog.ParseRecord(line)
		if err != nil {
			return
		}
		if !bytes.Equal(r.Format(), line) {
			t.Errorf("%q read as a record that writes %q", line, r.Format())
		}
	})
}

func testKey(t testing.TB, kid string) *fairlog.Key {
	t.Helper()
	entry, err := fairlog.GenerateKey(kid)
	if err != nil {
		t.Fatal(err)
	}
	k, err := fairlog.ParseKey(entry)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeysCheckpointsAndReceipts(t *testing.T) {
	for _, bad := range []string{"", "k1", "k1:short", "bad kid:AAAA", "k+1:" + strings.Repeat("A", 44)} {
		if _, err := fairlog.ParseKey(bad); !errors.Is(err, fairlog.ErrBadKey) || (len(bad) > 4 && strings.Contains(err.Error(), bad[4:])) {
			t.Errorf("ParseKey(%q) = %v, want ErrBadKey naming no seed", bad, err)
		}
	}
	k, other := testKey(t, "log1"), testKey(t, "log1")
	root := tlog.RecordHash([]byte("x\n"))
	signed, err := k.SignCheckpoint("s1", 7, root)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := fairlog.OpenCheckpoint(signed, k.VerifierKey())
	if err != nil || cp != (fairlog.Checkpoint{Screening: "s1", Size: 7, Root: root}) {
		t.Errorf("OpenCheckpoint = %+v, %v", cp, err)
	}
	if _, err := fairlog.OpenCheckpoint(signed, other.VerifierKey()); !errors.Is(err, fairlog.ErrBadSignature) {
		t.Errorf("a checkpoint checked with another key of the same name: %v, want ErrBadSignature", err)
	}
	r := fairlog.Receipt{Screening: "s1", Seq: 12, TokenHash: fairlog.TokenHash("t"), Time: 1700000000000}
	a, err := k.SignReceipt(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.SignReceipt(r)
	if !bytes.Equal(a, b) {
		t.Error("the same receipt signed twice differs")
	}
	if got, err := fairlog.OpenReceipt(a, k.VerifierKey()); err != nil || got != r {
		t.Errorf("OpenReceipt = %+v, %v; want %+v", got, err, r)
	}
	if _, err := fairlog.OpenReceipt(a, other.VerifierKey()); !errors.Is(err, fairlog.ErrBadSignature) {
		t.Errorf("a receipt checked with another key: %v", err)
	}
	if _, err := k.SignReceipt(fairlog.Receipt{Screening: "s1", Seq: 1, Entry: 1, TokenHash: r.TokenHash}); err == nil {
		t.Error("a receipt of both a place and an entry was signed")
	}
}

// served is a log served as a server serves it: checkpoint, tiles and key.
type served struct {
	records [][]byte
	hashes  []tlog.Hash
	signed  []byte
	key     *fairlog.Key
}

func serve(t testing.TB, key *fairlog.Key, screening string, rs []fairlog.Record) (*served, *httptest.Server) {
	t.Helper()
	s := &served{key: key}
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			if id >= int64(len(s.hashes)) {
				return nil, fmt.Errorf("hash %d not stored", id)
			}
			out[i] = s.hashes[id]
		}
		return out, nil
	})
	for n, r := range rs {
		line := r.Format()
		hs, err := tlog.StoredHashes(int64(n), line, reader)
		if err != nil {
			t.Fatal(err)
		}
		s.hashes = append(s.hashes, hs...)
		s.records = append(s.records, line)
	}
	root, err := tlog.TreeHash(int64(len(rs)), reader)
	if err != nil {
		t.Fatal(err)
	}
	if s.signed, err = key.SignCheckpoint(screening, int64(len(rs)), root); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/waitroom-log-key", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, s.key.VerifierKey()) })
	prefix := "/api/screenings/" + screening + "/log/"
	mux.HandleFunc(prefix+"checkpoint", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(s.signed) })
	mux.HandleFunc(prefix+"tile/", func(w http.ResponseWriter, r *http.Request) {
		data, _, err := fairlog.ReadTile(strings.TrimPrefix(r.URL.Path, prefix), int64(len(s.records)), reader, func(a, b int64) ([][]byte, error) {
			return s.records[a:b], nil
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(data)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv
}

func TestVerifyOverHTTP(t *testing.T) {
	key := testKey(t, "log1")
	rs := sale(40, 600) // more than two tiles of records
	s, srv := serve(t, key, "s1", rs)
	url := srv.URL + "/api/screenings/s1/log/"
	state := filepath.Join(t.TempDir(), "state.json")
	receipt, _ := key.SignReceipt(fairlog.Receipt{Screening: "s1", Seq: 300, TokenHash: rs[find(rs, 300)].H, Time: 6})
	rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url, StateFile: state, Receipt: receipt})
	if err != nil || len(rep.Violations) > 0 {
		t.Fatalf("Verify = %v, %v", rep, err)
	}
	if rep.Receipt == nil || rep.Receipt.Seq != 300 || !rep.Receipt.Admitted || rep.Receipt.Before != 298 || !rep.Receipt.AllLower {
		t.Errorf("the receipt stands %+v, want admitted after 298 (place 12 left), all lower", rep.Receipt)
	}

	// The log grows: consistent with the checkpoint kept.
	grown := append(slices.Clone(rs), fairlog.Record{Kind: fairlog.KindPause, T: 20})
	*s = *mustServe(t, key, grown)
	if rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url, StateFile: state}); err != nil || len(rep.Violations) > 0 {
		t.Fatalf("a grown log: %v, %v", rep, err)
	}
	// A fork: a record of the past changed, the log grown and signed by its own key.
	forked := slices.Clone(grown)
	forked[10].T = 999
	forked = append(forked, fairlog.Record{Kind: fairlog.KindResume, T: 21})
	*s = *mustServe(t, key, forked)
	if _, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url, StateFile: state}); !errors.Is(err, fairlog.ErrFork) {
		t.Errorf("a forked log: %v, want ErrFork", err)
	}
	// Records served that are not those signed.
	*s = *mustServe(t, key, grown)
	s.records[20] = []byte(strings.Replace(string(s.records[20]), "t=2", "t=3", 1))
	if _, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url}); !errors.Is(err, fairlog.ErrNotSigned) {
		t.Errorf("altered records: %v, want ErrNotSigned", err)
	}
	// A checkpoint signed by another key.
	*s = *mustServe(t, testKey(t, "log1"), grown)
	if _, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url, Key: key.VerifierKey()}); !errors.Is(err, fairlog.ErrBadSignature) {
		t.Errorf("another key's checkpoint: %v, want ErrBadSignature", err)
	}
	// A receipt the log does not hold, or signed by another key.
	*s = *mustServe(t, key, grown)
	for _, r := range [][]byte{
		must(key.SignReceipt(fairlog.Receipt{Screening: "s1", Seq: 300, TokenHash: fairlog.TokenHash("someone else"), Time: 6})),
		must(testKey(t, "log1").SignReceipt(fairlog.Receipt{Screening: "s1", Seq: 300, TokenHash: rs[find(rs, 300)].H, Time: 6})),
	} {
		rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url, Receipt: r})
		if err != nil || len(rep.Violations) == 0 {
			t.Errorf("a receipt not the log's: %v, %v; want a violation", rep, err)
		}
	}
}

// find is the index of the place record seq.
func find(rs []fairlog.Record, seq int64) int {
	for i, r := range rs {
		if r.Kind == fairlog.KindPlace && r.Seq == seq {
			return i
		}
	}
	return -1
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// mustServe builds what serve serves, without a new server.
func mustServe(t testing.TB, key *fairlog.Key, rs []fairlog.Record) *served {
	t.Helper()
	s, srv := serve(t, key, "s1", rs)
	srv.Close()
	return s
}

func TestMainSaysWhatItFound(t *testing.T) {
	key := testKey(t, "log1")
	rs := sale(10, 30)
	s, srv := serve(t, key, "s1", rs)
	url := srv.URL + "/api/screenings/s1/log/"
	dir := t.TempDir()
	run := func(args ...string) (int, string) {
		var out, errs bytes.Buffer
		code := fairlog.Main(context.Background(), args, &out, &errs)
		return code, out.String() + errs.String()
	}
	receipt := filepath.Join(dir, "receipt.txt")
	if err := os.WriteFile(receipt, must(key.SignReceipt(fairlog.Receipt{Screening: "s1", Seq: 5, TokenHash: rs[find(rs, 5)].H, Time: 5})), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := run(url, "--receipt", receipt, "--state", filepath.Join(dir, "state.json")); code != 0 || !strings.Contains(out, "your place 5 was admitted") {
		t.Errorf("a good log: exit %d\n%s", code, out)
	}
	broken := slices.Clone(rs)
	last := len(broken) - 1
	for broken[last].Kind != fairlog.KindAdmit {
		last--
	}
	broken[last].Seqs = []int64{1} // the last tick admits place 1 again
	*s = *mustServe(t, key, broken)
	if code, out := run(url, "--state", ""); code != 1 || !strings.Contains(out, "VIOLATIONS") {
		t.Errorf("a log that breaks a rule: exit %d\n%s", code, out)
	}
	if code, out := run(url, "--state", filepath.Join(dir, "state.json")); code != 1 || !strings.Contains(out, "VIOLATION") {
		t.Errorf("a log that forks from the one seen: exit %d\n%s", code, out)
	}
	if code, _ := run(); code != 2 {
		t.Errorf("no URL: exit %d, want 2", code)
	}
	if code, _ := run("http://127.0.0.1:1/api/screenings/s1/log/", "--state", ""); code != 2 {
		t.Errorf("no server: exit %d, want 2", code)
	}
}

// BenchmarkVerify70000 verifies the log of a 30,000-place sale's size (about 70,000 records).
func BenchmarkVerify70000(b *testing.B) {
	key := testKey(b, "log1")
	rs := sale(2000, 33000)
	for len(rs) < 70000 {
		rs = append(rs, fairlog.Record{Kind: fairlog.KindPause, T: 30}, fairlog.Record{Kind: fairlog.KindResume, T: 31})
	}
	_, srv := serve(b, key, "s1", rs)
	url := srv.URL + "/api/screenings/s1/log/"
	b.ResetTimer()
	for b.Loop() {
		rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: url})
		if err != nil || len(rep.Violations) > 0 {
			b.Fatal(rep, err)
		}
	}
}
