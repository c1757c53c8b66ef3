package fairness_test

import (
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/fairness"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTwoWritersAppendEveryRecordOnceInOrder: two instances' writers step the same log at once, while
// registrations keep adding records; the database ends with every record of the stream exactly once, in
// the stream's order, and the last checkpoint signs the tree of exactly those records.
func TestTwoWritersAppendEveryRecordOnceInOrder(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		entry, err := fairlog.GenerateKey("w")
		if err != nil {
			t.Fatal(err)
		}
		key, err := fairlog.ParseKey(entry)
		if err != nil {
			t.Fatal(err)
		}
		q := queue.New(env.Redis, env.Prefix)
		q.SetLog(true)
		log := slog.New(slog.DiscardHandler)
		writers := []*fairness.Log{fairness.New(env.DB, q, key, "a", nil, log), fairness.New(env.DB, q, key, "b", nil, log)}
		const screening, n = "w1", 300
		var want []string
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for _, w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					_ = w.Step(t.Context(), screening) // a writer whose head moved reads it again
				}
			}()
		}
		for i := 0; i < n; i++ {
			e, err := q.Register(t.Context(), screening, "")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, "place t=… seq="+itoa(e.Seq)+" h="+fairlog.TokenHash(e.Token))
		}
		close(stop)
		wg.Wait()
		for _, w := range writers {
			if err := w.Step(t.Context(), screening); err != nil {
				t.Fatal(err)
			}
		}

		var stored []string
		if err := env.DB.Select(&stored, env.DB.Rebind(`SELECT record FROM admission_log WHERE screening = ? ORDER BY idx`), screening); err != nil {
			t.Fatal(err)
		}
		if len(stored) != n {
			t.Fatalf("%d records stored, want %d, each once", len(stored), n)
		}
		got := make([]string, len(stored))
		for i, r := range stored {
			rec, err := fairlog.ParseRecord([]byte(r + "\n"))
			if err != nil || rec.Kind != fairlog.KindPlace {
				t.Fatalf("record %d %q: %v", i, r, err)
			}
			got[i] = "place t=… seq=" + itoa(rec.Seq) + " h=" + rec.H
		}
		if !slices.Equal(got, want) {
			t.Errorf("stored records are not the stream's, once each, in order")
		}

		signed, size, err := writers[0].Checkpoint(t.Context(), screening)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := fairlog.OpenCheckpoint(signed, key.VerifierKey())
		if err != nil {
			t.Fatal(err)
		}
		var hashes []tlog.Hash
		reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(ids))
			for i, id := range ids {
				out[i] = hashes[id]
			}
			return out, nil
		})
		for i, r := range stored[:size] {
			hs, err := tlog.StoredHashes(int64(i), []byte(r+"\n"), reader)
			if err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, hs...)
		}
		root, err := tlog.TreeHash(size, reader)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Size != size || cp.Root != root || size == 0 {
			t.Errorf("checkpoint of %d records, root %v; the stored records' first %d hash to %v", cp.Size, cp.Root, size, root)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
