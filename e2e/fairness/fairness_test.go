// The admission log from outside (docs/admission-log.md): a sale with a pre-queue, run by two instances on
// one Redis and one database (one instance on the embedded backends), checked by the verifier over the
// public routes; every receipt a socket was given found in the log where the socket was told it stood;
// and the database tampered with, each way caught.

package fairness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The sale: early arrivals wait in the pre-queue, later ones queue after the opening, some leave, the
// operator pauses and resumes, everyone left is admitted.
const (
	early   = 200
	later   = 2000
	leavers = 20
)

// user is one socket's view: its token, its receipt, and the rank its first message said.
type user struct {
	token     string
	receipt   string
	firstRank int64 // a later arrival's rank in its queued message (0 for the early)
	sock      *testenv.Socket
	admitted  bool
}

// TestAdmissionLogOfASaleVerifies runs the sale and checks it from outside: `verify-log`'s checks pass
// over the public routes; every user's receipt is signed by the log's key, names a record of the log, and a
// later arrival's record stands where its first message said (its rank is one more than the places still
// waiting ahead of it when it was placed, replayed from the log).
func TestAdmissionLogOfASaleVerifies(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		servers, logURL := startSale(t, env, "fair")
		users := runSale(t, servers, "fair")
		report := verify(t, logURL, filepath.Join(t.TempDir(), "state.json"))
		if len(report.Violations) > 0 {
			t.Fatalf("verify-log found %d violations: %v", len(report.Violations), report.Violations)
		}
		records := readRecords(t, servers[0], "fair")
		vkey := logKey(t, servers[0])
		checkReceipts(t, report, users, records, vkey)
	})
}

// startSale starts the instances; see startSaleWithKey.
func startSale(t *testing.T, env *testenv.Env, id string) ([]*apptest.Server, string) {
	t.Helper()
	servers, url, _ := startSaleWithKey(t, env, id, nil)
	return servers, url
}

// startSaleWithKey starts the instances (two on real backends, one on the embedded, which has no shared Redis)
// with the settings extra too, and returns them, the screening's log URL and the log's key.
func startSaleWithKey(t *testing.T, env *testenv.Env, id string, extra map[string]string) ([]*apptest.Server, string, string) {
	t.Helper()
	key, err := fairlog.GenerateKey("test-log")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{
		"WAITROOM_ADMIN_KEY":                       apptest.AdminKey,
		"WAITROOM_DEMO_ENABLED":                    "false",
		"WAITROOM_FAIRNESS_KEY":                    key,
		"WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND": "100000",
		"WAITROOM_LIMITS_REGISTRATION_BURST":       "100000",
		"WAITROOM_LIMITS_SOCKETS_PER_ADDRESS":      "10000",
	}
	maps.Copy(settings, extra)
	servers := []*apptest.Server{apptest.Start(t, env, settings)}
	if env.Kind == testenv.Real {
		servers = append(servers, apptest.Start(t, env, settings))
	}
	return servers, servers[0].URL + "/api/screenings/" + id + "/log/", key
}

// runSale creates the screening, fills its pre-queue, lets the line open, queues the later arrivals, has
// some leave, pauses and resumes, admits everyone else, and closes the sale.
func runSale(t *testing.T, servers []*apptest.Server, id string) []*user {
	t.Helper()
	opens := time.Now().Add(4 * time.Second).UTC().Truncate(time.Millisecond)
	code := servers[0].Admin(t, http.MethodPost, "/screenings", map[string]any{
		"id": id, "name": "Fair", "starts_at": opens.Add(time.Hour), "sale_opens_at": opens,
		"rows": 10, "seats_per_row": 10,
		"admission": map[string]any{"interval": "200ms", "batch_size": 150, "max_active": 100000, "active_ttl": "10m"},
	}, nil)
	if code != http.StatusCreated {
		t.Fatalf("POST /api/admin/screenings = %d, want 201", code)
	}
	users := make([]*user, 0, early+later)
	users = append(users, dialUsers(t, servers, id, early, "prequeue")...)
	if time.Now().After(opens) {
		t.Fatalf("the pre-queue took past the opening to fill")
	}
	// Once the line is open (an early arrival hears its rank or its pass), the later arrivals.
	m, err := users[0].sock.ReadUntil(func(m testenv.Message) bool { return m.Type == "position" || m.Type == "admitted" },
		time.Until(opens)+20*time.Second)
	if err != nil {
		t.Fatalf("the line did not open within 20 s of its sale time: %v", err)
	}
	users[0].admitted = m.Type == "admitted"
	if code := servers[0].Admin(t, http.MethodPost, "/screenings/"+id+"/pause", nil, nil); code != http.StatusOK {
		t.Fatalf("pause = %d", code)
	}
	later := dialUsers(t, servers, id, later, "queued")
	users = append(users, later...)
	// A reconnect with the token, while paused (still waiting), is given the same receipt, byte for byte.
	again := servers[len(servers)-1].Dial(t, id, later[leavers].token)
	if m := again.Next(t, 10*time.Second); m.Type != "queued" || m.Receipt != later[leavers].receipt {
		t.Fatalf("a reconnect's first message %+v, want queued with the receipt it was given first:\n%s", m, later[leavers].receipt)
	}
	for _, u := range later[:leavers] {
		// The hello's write deadline (testenv's dial) may have passed while the others dialled.
		_ = u.sock.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := u.sock.WriteMessage(1, []byte(`{"type":"leave"}`)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if code := servers[0].Admin(t, http.MethodPost, "/screenings/"+id+"/resume", nil, nil); code != http.StatusOK {
		t.Fatalf("resume = %d", code)
	}
	// One after the other (each socket's messages wait in its buffer), so the test holds a goroutine per
	// socket nowhere: the race detector allows 8,128 at once, and the servers' readers take 2,200.
	deadline := time.Now().Add(60 * time.Second)
	for _, u := range users {
		if u.admitted || slicesContains(later[:leavers], u) {
			continue
		}
		if _, err := u.sock.ReadUntil(func(m testenv.Message) bool { return m.Type == "admitted" }, time.Until(deadline)); err != nil {
			t.Fatalf("user %s not admitted: %v", u.token, err)
		}
	}
	if code := servers[0].Admin(t, http.MethodPost, "/screenings/"+id+"/close", nil, nil); code != http.StatusOK {
		t.Fatalf("close = %d", code)
	}
	return users
}

func slicesContains(us []*user, u *user) bool {
	for _, v := range us {
		if v == u {
			return true
		}
	}
	return false
}

// verify runs the verifier over the routes once the log holds every record the sale made: its checkpoint
// has stopped growing for two seconds.
func verify(t *testing.T, logURL, state string) *fairlog.Report {
	t.Helper()
	settled(t, logURL)
	rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: logURL, StateFile: state})
	if err != nil {
		t.Fatalf("verify-log could not check %s: %v", logURL, err)
	}
	return rep
}

// settled waits until the log's checkpoint has kept its size for two seconds.
func settled(t *testing.T, logURL string) int64 {
	t.Helper()
	var last int64 = -1
	stable := time.Now()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		size := checkpointSize(t, logURL)
		if size != last {
			last, stable = size, time.Now()
		} else if size > 0 && time.Since(stable) > 2*time.Second {
			return size
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the log's checkpoint did not settle within 60 s (last size %d)", last)
	return 0
}

// checkpointSize is the size the latest checkpoint states (0: none yet).
func checkpointSize(t *testing.T, logURL string) int64 {
	t.Helper()
	code, body := getText(t, logURL+"checkpoint")
	if code == http.StatusNotFound {
		return 0
	}
	lines := strings.Split(body, "\n")
	if code != http.StatusOK || len(lines) < 3 {
		t.Fatalf("GET checkpoint = %d %q", code, body)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		t.Fatalf("checkpoint %q: %v", body, err)
	}
	return size
}

// logKey is the log's verifier key, as the server publishes it.
func logKey(t *testing.T, srv *apptest.Server) string {
	t.Helper()
	code, body := getText(t, srv.URL+"/.well-known/waitroom-log-key")
	if code != http.StatusOK {
		t.Fatalf("GET /.well-known/waitroom-log-key = %d", code)
	}
	return strings.TrimSpace(body)
}

// readRecords reads the whole log through the records route.
func readRecords(t *testing.T, srv *apptest.Server, id string) []fairlog.Record {
	t.Helper()
	size := checkpointSize(t, srv.URL+"/api/screenings/"+id+"/log/")
	var out []fairlog.Record
	for start := int64(0); start < size; start += 1000 {
		end := min(start+1000, size)
		var got struct {
			Records []string `json:"records"`
		}
		if code := srv.GetJSON(t, fmt.Sprintf("/api/screenings/%s/log/records?start=%d&end=%d", id, start, end), &got); code != http.StatusOK {
			t.Fatalf("GET records %d to %d = %d", start, end, code)
		}
		for _, r := range got.Records {
			rec, err := fairlog.ParseRecord([]byte(r + "\n"))
			if err != nil {
				t.Fatalf("record %q: %v", r, err)
			}
			out = append(out, rec)
		}
	}
	return out
}

// TestAdmissionLogTamperedWithIsCaught runs a sale, then changes its log in the database, each way in turn
// and back: the verifier must refuse every change. A change the log's key did not sign (a record altered,
// removed, two swapped) breaks the tree against the signed checkpoint; a checkpoint signed by another key
// fails its signature; a history rewritten and signed by the log's own key, after a verifier saw the
// earlier one, fails consistency; and a rewritten log signed by its key that breaks the rules (an
// admission out of order, a seed that does not match its commitment) fails the rules.
func TestAdmissionLogTamperedWithIsCaught(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		servers, logURL, key := startSaleWithKey(t, env, "tamper", nil)
		runSale(t, servers, "tamper")
		state := filepath.Join(t.TempDir(), "state.json")
		if rep := verify(t, logURL, state); len(rep.Violations) > 0 {
			t.Fatalf("the untouched log: %v", rep.Violations)
		}
		orig := storedLog(t, env, "tamper")
		var err error
		if orig.state, err = os.ReadFile(state); err != nil {
			t.Fatal(err)
		}
		idxOf := func(prefix string, nth int) int {
			for i, r := range orig.records {
				if strings.HasPrefix(r, prefix) {
					if nth == 0 {
						return i
					}
					nth--
				}
			}
			t.Fatalf("no %d-th record %q in the log", nth, prefix)
			return 0
		}
		firstAdmit, secondAdmit := idxOf("admit ", 0), idxOf("admit ", 1)
		cases := []struct {
			name   string
			caught string // what the verifier's error or report must say
			tamper func(t *testing.T)
		}{
			{"a record altered", "not the log its checkpoint signed", func(t *testing.T) {
				exec(t, env, `UPDATE admission_log SET record = ? WHERE screening = ? AND idx = ?`,
					strings.Replace(orig.records[firstAdmit], "seqs=1", "seqs=2", 1), "tamper", firstAdmit)
			}},
			{"a record removed", "data/", func(t *testing.T) {
				exec(t, env, `DELETE FROM admission_log WHERE screening = ? AND idx = ?`, "tamper", secondAdmit)
			}},
			{"two admissions swapped", "not the log its checkpoint signed", func(t *testing.T) {
				exec(t, env, `UPDATE admission_log SET record = ? WHERE screening = ? AND idx = ?`, orig.records[secondAdmit], "tamper", firstAdmit)
				exec(t, env, `UPDATE admission_log SET record = ? WHERE screening = ? AND idx = ?`, orig.records[firstAdmit], "tamper", secondAdmit)
			}},
			{"a checkpoint signed by another key", "not signed by the log's key", func(t *testing.T) {
				other, err := fairlog.GenerateKey("test-log")
				if err != nil {
					t.Fatal(err)
				}
				rewrite(t, env, "tamper", other, orig.records)
			}},
			{"a history rewritten after it was seen", "not consistent with one seen before", func(t *testing.T) {
				recs := slices.Clone(orig.records)
				recs[firstAdmit], recs[secondAdmit] = recs[secondAdmit], recs[firstAdmit]
				rewrite(t, env, "tamper", key, recs)
			}},
			{"an admission out of sequence, signed", "still waits", func(t *testing.T) {
				recs := slices.Clone(orig.records)
				// The last place admitted as soon as it is taken, while the places before it wait.
				last := idxOf("place ", early+later-1)
				recs = slices.Insert(recs, last+1, "admit t=1 via=tick seqs="+strconv.Itoa(early+later)+" batch=150 max=100000 active=1")
				rewrite(t, env, "tamper", key, recs)
				_ = os.Remove(state) // a verifier new to this log: only the rules can catch it
			}},
			{"a seed that does not match its commitment, signed", "the revealed seed", func(t *testing.T) {
				recs := slices.Clone(orig.records)
				i := idxOf("reveal ", 0)
				recs[i] = recs[i][:len(recs[i])-1] + flipHex(recs[i][len(recs[i])-1])
				rewrite(t, env, "tamper", key, recs)
				_ = os.Remove(state)
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				c.tamper(t)
				rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: logURL, StateFile: state})
				said := fmt.Sprint(err)
				if rep != nil {
					said += "\n" + rep.String()
				}
				if err == nil && len(rep.Violations) == 0 {
					t.Errorf("verify-log passed a log with %s", c.name)
				} else if !strings.Contains(said, c.caught) {
					t.Errorf("verify-log refused a log with %s, but not for it (want %q):\n%s", c.name, c.caught, said)
				}
				restore(t, env, "tamper", orig)
				if err := os.WriteFile(state, orig.state, 0o600); err != nil {
					t.Fatal(err)
				}
				if rep := verify(t, logURL, state); len(rep.Violations) > 0 {
					t.Fatalf("the log restored: %v", rep.Violations)
				}
			})
		}
	})
}

// flipHex is another hex digit than c.
func flipHex(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}

// stored is a screening's log as the database holds it, and the verifier's state file once it checked it.
type stored struct {
	records    []string
	checkpoint string
	state      []byte
}

// storedLog reads the screening's log from the database (the state file is filled in by the caller).
func storedLog(t *testing.T, env *testenv.Env, id string) stored {
	t.Helper()
	var s stored
	if err := env.DB.Select(&s.records, env.DB.Rebind(`SELECT record FROM admission_log WHERE screening = ? ORDER BY idx`), id); err != nil {
		t.Fatal(err)
	}
	if err := env.DB.Get(&s.checkpoint, env.DB.Rebind(`SELECT checkpoint FROM admission_log_heads WHERE screening = ?`), id); err != nil {
		t.Fatal(err)
	}
	return s
}

// exec runs a statement on the test's database.
func exec(t *testing.T, env *testenv.Env, q string, args ...any) {
	t.Helper()
	if _, err := env.DB.Exec(env.DB.Rebind(q), args...); err != nil {
		t.Fatal(err)
	}
}

// rewrite replaces the screening's log in the database with records, its tree's hashes computed anew and
// a checkpoint of them signed with key (a "kid:seed" entry): a log as a dishonest server holding key
// would serve it.
func rewrite(t *testing.T, env *testenv.Env, id, key string, records []string) {
	t.Helper()
	k, err := fairlog.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hashes, root := treeOf(t, records)
	signed, err := k.SignCheckpoint(id, int64(len(records)), root)
	if err != nil {
		t.Fatal(err)
	}
	store(t, env, id, records, hashes, string(signed))
}

// restore puts the log back as it was stored.
func restore(t *testing.T, env *testenv.Env, id string, s stored) {
	t.Helper()
	hashes, _ := treeOf(t, s.records)
	store(t, env, id, s.records, hashes, s.checkpoint)
}

// treeOf computes the stored hashes (tlog's) and the root of a log of records.
func treeOf(t *testing.T, records []string) (map[int64]tlog.Hash, tlog.Hash) {
	t.Helper()
	hashes := map[int64]tlog.Hash{}
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = hashes[id]
		}
		return out, nil
	})
	for n, r := range records {
		hs, err := tlog.StoredHashes(int64(n), []byte(r+"\n"), reader)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range hs {
			hashes[tlog.StoredHashIndex(0, int64(n))+int64(j)] = h
		}
	}
	root, err := tlog.TreeHash(int64(len(records)), reader)
	if err != nil {
		t.Fatal(err)
	}
	return hashes, root
}

// store writes a log whole: its records, its hashes and its head.
func store(t *testing.T, env *testenv.Env, id string, records []string, hashes map[int64]tlog.Hash, checkpoint string) {
	t.Helper()
	tx := env.DB.MustBegin()
	defer func() { _ = tx.Rollback() }()
	for _, q := range []string{`DELETE FROM admission_log WHERE screening = ?`, `DELETE FROM admission_log_hashes WHERE screening = ?`} {
		if _, err := tx.Exec(tx.Rebind(q), id); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range records {
		if _, err := tx.Exec(tx.Rebind(`INSERT INTO admission_log (screening, idx, record) VALUES (?, ?, ?)`), id, i, r); err != nil {
			t.Fatal(err)
		}
	}
	for hid, h := range hashes {
		if _, err := tx.Exec(tx.Rebind(`INSERT INTO admission_log_hashes (screening, id, hash) VALUES (?, ?, ?)`), id, hid, h[:]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(tx.Rebind(`UPDATE admission_log_heads SET size = ?, checkpoint = ?, checkpoint_size = ? WHERE screening = ?`),
		len(records), checkpoint, len(records), id); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// checkReceipts checks every user's receipt: signed by the log's key, for its token, found in the log by
// the report; and a later arrival's place stands where its first message said: its rank there is one
// more than the places still waiting ahead of it when its place record was appended.
func checkReceipts(t *testing.T, report *fairlog.Report, users []*user, records []fairlog.Record, vkey string) {
	t.Helper()
	ahead := map[int64]int64{} // seq -> places waiting below it when it was placed
	waiting := map[int64]bool{}
	for _, r := range records {
		switch r.Kind {
		case fairlog.KindPlace:
			n := int64(0)
			for q := range waiting {
				if q < r.Seq {
					n++
				}
			}
			ahead[r.Seq] = n
			waiting[r.Seq] = true
		case fairlog.KindAdmit:
			for _, q := range r.Seqs {
				delete(waiting, q)
			}
		case fairlog.KindGone:
			delete(waiting, r.Seq)
		case fairlog.KindClose:
			clear(waiting)
		}
	}
	entries, places := 0, 0
	for _, u := range users {
		r, err := fairlog.OpenReceipt([]byte(u.receipt), vkey)
		if err != nil {
			t.Fatalf("receipt of %s: %v", u.token, err)
		}
		if r.TokenHash != fairlog.TokenHash(u.token) {
			t.Errorf("receipt of %s names token hash %s, want %s", u.token, r.TokenHash, fairlog.TokenHash(u.token))
		}
		before := len(report.Violations)
		report.CheckReceipt(r)
		if len(report.Violations) > before || report.Receipt == nil {
			t.Fatalf("receipt %+v not in the log: %v", r, report.Violations[before:])
		}
		if u.firstRank > 0 {
			places++
			if r.Seq == 0 {
				t.Errorf("a later arrival's receipt names entry %d, want a place", r.Entry)
			} else if got := ahead[r.Seq] + 1; got != u.firstRank {
				t.Errorf("place %d: its first message said rank %d, the log has %d waiting ahead of it (rank %d)", r.Seq, u.firstRank, ahead[r.Seq], got)
			}
		} else {
			entries++
			if r.Entry == 0 || report.Receipt.Seq == 0 {
				t.Errorf("an early arrival's receipt %+v, want an entry the opening gave a place (standing %+v)", r, report.Receipt)
			}
		}
		if left := slicesContains(users[early:early+leavers], u); report.Receipt.GivenUp != left || (!left && (!report.Receipt.Admitted || !report.Receipt.AllLower)) {
			t.Errorf("receipt %+v (left: %v): %s", r, left, report.Receipt)
		}
	}
	report.Receipt = nil
	t.Logf("%d entries and %d places checked; %s", entries, places, strings.Join(report.Lines(), "; "))
}

// TestTheLogsRoutesRefuseBadInput: the public routes answer malformed or out-of-range queries with a
// clear 4xx and do bounded work; a server that keeps no log says so.
func TestTheLogsRoutesRefuseBadInput(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		servers, logURL := startSale(t, env, "routes")
		srv := servers[0]
		code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
			"id": "routes", "name": "Routes", "starts_at": time.Now().Add(time.Hour), "sale_opens_at": time.Now().Add(-time.Minute),
			"rows": 1, "seats_per_row": 2,
		}, nil)
		if code != http.StatusCreated {
			t.Fatalf("create = %d", code)
		}
		// Paused, the line admits nobody, so the log stays the size settled reads while the routes are asked
		// (a tick's admission had grown it past "size+1" in a CI run).
		if code := srv.Admin(t, http.MethodPost, "/screenings/routes/pause", nil, nil); code != http.StatusOK {
			t.Fatalf("pause = %d", code)
		}
		s := srv.Dial(t, "routes", "")
		if m := s.Next(t, 5*time.Second); m.Receipt == "" {
			t.Fatalf("first message %+v, want a receipt", m)
		}
		size := settled(t, logURL)
		for _, c := range []struct {
			path string
			want int
			code string
		}{
			{"records?start=0&end=" + strconv.FormatInt(size, 10), http.StatusOK, ""},
			{"records?start=0&end=" + strconv.FormatInt(size+1, 10), http.StatusNotFound, "NOT_IN_LOG"},
			{"records?start=0&end=1001", http.StatusBadRequest, "BAD_REQUEST"},
			{"records?start=5&end=2", http.StatusBadRequest, "BAD_REQUEST"},
			{"records?start=-1&end=2", http.StatusBadRequest, "BAD_REQUEST"},
			{"records?start=x&end=2", http.StatusBadRequest, "BAD_REQUEST"},
			{"records?start=0&end=99999999999999999999", http.StatusBadRequest, "BAD_REQUEST"},
			{"records", http.StatusBadRequest, "BAD_REQUEST"},
			{"proof?seq=1", http.StatusOK, ""},
			{"proof?seq=0", http.StatusBadRequest, "BAD_REQUEST"},
			{"proof?seq=abc", http.StatusBadRequest, "BAD_REQUEST"},
			{"tile/8/data/000.p/" + strconv.FormatInt(size, 10), http.StatusOK, ""},
			{"tile/8/data/000.p/" + strconv.FormatInt(size+1, 10), http.StatusNotFound, "NOT_IN_LOG"},
			{"tile/8/data/999", http.StatusNotFound, "NOT_IN_LOG"},
			{"tile/8/0/x123/456", http.StatusNotFound, "NOT_IN_LOG"},
			{"tile/9/0/000", http.StatusBadRequest, "BAD_REQUEST"},
			{"tile/8/0/abc", http.StatusBadRequest, "BAD_REQUEST"},
			{"tile/" + strings.Repeat("8/", 40), http.StatusBadRequest, "BAD_REQUEST"},
		} {
			got, body := getMaybeJSON(t, srv.URL+"/api/screenings/routes/log/"+c.path)
			if got != c.want || (c.code != "" && apptest.ErrorCode(body) != c.code) {
				t.Errorf("GET %s = %d %v, want %d %s", c.path, got, body, c.want, c.code)
			}
		}
		var body map[string]any
		if got := srv.GetJSON(t, "/api/screenings/nosuch/log/checkpoint", &body); got != http.StatusNotFound || apptest.ErrorCode(body) != "NO_ADMISSION_LOG" {
			t.Errorf("the checkpoint of a screening with no log = %d %v, want 404 NO_ADMISSION_LOG", got, body)
		}
		resp, err := http.Get(logURL + "checkpoint")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("the checkpoint's CORS header = %q, want *", resp.Header.Get("Access-Control-Allow-Origin"))
		}
	})
}

// getMaybeJSON GETs url and decodes its body when it is JSON.
func getMaybeJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode, body
}

// getText GETs url and returns its status and body.
func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// dialUsers connects n users to the screening, a few dozen at a time, spread over the servers, and reads
// each one's first message, which must be want and carry a receipt.
func dialUsers(t *testing.T, servers []*apptest.Server, id string, n int, want string) []*user {
	t.Helper()
	out := make([]*user, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			srv := servers[i%len(servers)]
			s := srv.Dial(t, id, "")
			m, err := s.Read(10 * time.Second)
			if err != nil || m.Type != want || m.Receipt == "" {
				errs <- fmt.Errorf("socket %d's first message %+v, %v; want %s with a receipt", i, m, err, want)
				return
			}
			u := &user{token: m.Token, receipt: m.Receipt, sock: s}
			if want == "queued" {
				u.firstRank = m.Rank
			}
			out[i] = u
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}
