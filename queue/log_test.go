package queue_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// logTexts reads the screening's log records from Redis, their times replaced by T so a test can compare
// them whole.
func logTexts(t *testing.T, q *queue.Queue, screening string) []string {
	t.Helper()
	recs, err := q.LogRecords(t.Context(), screening, "", 100000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		fields := strings.Fields(r.Text)
		for j, f := range fields {
			if strings.HasPrefix(f, "t=") {
				fields[j] = "t=T"
			}
		}
		out[i] = strings.Join(fields, " ")
	}
	return out
}

// TestTheLogRecordsEveryChangeOfTheLineInOrder: with the log kept, the line's scripts append what they did
// to the screening's log, in the order they ran: the seed's commitment before the first early arrival, the
// pre-queue's entries, the opening (an entry gone too long, the seed revealed, the places in the order of
// their keys from that seed), later places, a pace and an admission, a leave, a pause and a resume, and
// the close. Every record is one fairlog reads. With the log off, nothing is appended.
func TestTheLogRecordsEveryChangeOfTheLineInOrder(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		q.SetLog(true)
		t0 := time.Now().Truncate(time.Second)
		clk := newClock(q, t0)
		opensAt := t0.Add(time.Hour)
		early := enterN(t, q, screening, opensAt, 5)
		// The early arrivals' receipts name their entries, 1..5, and a reconnect names the same.
		again, err := q.Enter(t.Context(), screening, early[2], opensAt)
		if err != nil || again.Receipt == nil || again.Receipt.Entry != 3 || !again.Receipt.At.Equal(t0) {
			t.Fatalf("Enter again = %+v, %v; want the receipt of entry 3 at %v", again.Receipt, err, t0)
		}
		// The fifth leaves; the fourth's page closes for longer than the grace before the opening.
		if _, err := q.Leave(t.Context(), screening, early[4]); err != nil {
			t.Fatal(err)
		}
		if err := q.Disconnected(t.Context(), screening, early[3]); err != nil {
			t.Fatal(err)
		}
		clk.Set(opensAt)
		s := settings(2, 100)
		s.Grace = time.Minute
		if _, err := q.Open(t.Context(), screening, opensAt, s); err != nil {
			t.Fatal(err)
		}
		clk.Set(opensAt.Add(time.Second))
		later := registerN(t, q, screening, 3)
		if _, err := q.Admit(t.Context(), screening, opensAt.Add(time.Second), s); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Leave(t.Context(), screening, later[1]); err != nil {
			t.Fatal(err)
		}
		if err := q.Pause(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		if err := q.Pause(t.Context(), screening); err != nil { // already paused: nothing new
			t.Fatal(err)
		}
		if err := q.Resume(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		if err := q.Close(t.Context(), screening); err != nil {
			t.Fatal(err)
		}

		got := logTexts(t, q, screening)
		seed := revealed(t, got)
		hash := func(tok string) string { return fairlog.TokenHash(tok) }
		// The three entries shuffled, in the order of their keys from the seed.
		shuffled := []int{0, 1, 2}
		sort.Slice(shuffled, func(i, j int) bool {
			return fairlog.ShuffleKey(seed, hash(early[shuffled[i]])) < fairlog.ShuffleKey(seed, hash(early[shuffled[j]]))
		})
		want := []string{"commit t=T seed=" + fairlog.SeedCommit(seed)}
		for i, tok := range early {
			want = append(want, fmt.Sprintf("pre t=T n=%d h=%s", i+1, hash(tok)))
		}
		want = append(want, "pre-gone t=T n=5 why=left", "pre-gone t=T n=4 why=abandoned", "reveal t=T seed="+hex.EncodeToString(seed))
		for i, e := range shuffled {
			want = append(want, fmt.Sprintf("place t=T seq=%d h=%s n=%d", i+1, hash(early[e]), e+1))
		}
		for i, tok := range later {
			want = append(want, fmt.Sprintf("place t=T seq=%d h=%s", 4+i, hash(tok)))
		}
		want = append(want, "pace t=T interval=1000 batch=2 max=100", "admit t=T via=tick seqs=1-2 batch=2 max=100 active=2",
			"gone t=T seq=5 why=left", "pause t=T", "resume t=T", "close t=T why=sold_out")
		if !slices.Equal(got, want) {
			t.Errorf("the log =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		recs, err := q.LogRecords(t.Context(), screening, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if _, err := fairlog.ParseRecord([]byte(r.Text + "\n")); err != nil {
				t.Errorf("fairlog cannot read %q: %v", r.Text, err)
			}
		}
		// Read after an id, then trimmed up to it: what is left starts after it.
		after, err := q.LogRecords(t.Context(), screening, recs[3].ID, 1000)
		if err != nil || len(after) != len(recs)-4 || after[0].ID != recs[4].ID {
			t.Errorf("LogRecords after the 4th = %d records from %v, %v; want %d from %s", len(after), after, err, len(recs)-4, recs[4].ID)
		}
		if err := q.TrimLog(t.Context(), screening, recs[3].ID); err != nil {
			t.Fatal(err)
		}
		left, err := q.LogRecords(t.Context(), screening, "", 1000)
		if err != nil || len(left) != len(recs)-3 || left[0].ID != recs[3].ID {
			t.Errorf("LogRecords after TrimLog = %d records, %v; want %d from %s", len(left), err, len(recs)-3, recs[3].ID)
		}

		// With the log off, the same changes append nothing.
		off := queue.New(env.Redis, env.Prefix)
		registerN(t, off, "s2", 2)
		if got := logTexts(t, off, "s2"); len(got) != 0 {
			t.Errorf("the log of a queue that keeps none = %v, want nothing", got)
		}
	})
}

// revealed is the seed the log's reveal record shows.
func revealed(t *testing.T, texts []string) []byte {
	t.Helper()
	for _, r := range texts {
		if v, ok := strings.CutPrefix(r, "reveal t=T seed="); ok {
			seed, err := hex.DecodeString(v)
			if err != nil {
				t.Fatal(err)
			}
			return seed
		}
	}
	t.Fatalf("no reveal in the log:\n%s", strings.Join(texts, "\n"))
	return nil
}

// TestAnOpenLineDoesNotAskForASeedAtEveryRegistration: with the log kept, a registration may need the
// pre-queue's seed, but a line already open has none and never will: the queue asks Redis once (a lone
// script) and remembers the answer, so the registrations of a crowd go in their pipelines alone.
func TestAnOpenLineDoesNotAskForASeedAtEveryRegistration(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		q.SetLog(true)
		registerN(t, q, screening, 1) // opens the line
		counted := testenv.CountCalls(env.Redis)
		registerN(t, q, screening, 20)
		if n := counted.LoneScripts.Load(); n > 1 {
			t.Errorf("20 registrations in an open line sent %d lone scripts, want at most 1 (the seed asked once)", n)
		}
	})
}

// seedReads counts the reads of one screening's seed (seed.lua's runs, whatever they answer), and holds the
// first until hold is closed.
type seedReads struct {
	key  string
	n    atomic.Int64
	held atomic.Bool
	hold chan struct{}
}

func (h *seedReads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *seedReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *seedReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !strings.HasPrefix(cmd.Name(), "eval") || !slices.Contains(cmd.Args(), any(h.key)) {
			return next(ctx, cmd)
		}
		if h.held.CompareAndSwap(false, true) {
			<-h.hold
		}
		err := next(ctx, cmd)
		if err == nil || errors.Is(err, redis.Nil) { // not a NOSCRIPT answer, which EVAL follows
			h.n.Add(1)
		}
		return err
	}
}

// TestACrowdSharesOneReadOfTheSeed: once the remembered seed (or its absence) is a second old, the
// registrations that come together share one read of it from Redis, instead of one script each: a burst's
// hundreds of handshakes would otherwise queue for Redis connections behind their own reads, once a second.
func TestACrowdSharesOneReadOfTheSeed(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		q.SetLog(true)
		var clock atomic.Int64
		clock.Store(time.Now().UnixMilli())
		queue.SetNow(q, func() time.Time { return time.UnixMilli(clock.Load()) })
		registerN(t, q, screening, 1) // opens the line; the seed's absence is remembered
		clock.Add(2 * time.Second.Milliseconds())

		reads := &seedReads{key: queue.Key(env.Prefix, screening, "seed"), hold: make(chan struct{})}
		env.Redis.AddHook(reads)
		const crowd = 50
		var wg sync.WaitGroup
		for range crowd {
			wg.Go(func() {
				if _, err := q.Register(t.Context(), screening, ""); err != nil {
					t.Error(err)
				}
			})
		}
		// While the first read's answer is held, the others wait for it, or send reads of their own.
		for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline) && reads.n.Load() == 0; {
			time.Sleep(5 * time.Millisecond)
		}
		close(reads.hold)
		wg.Wait()
		if n := reads.n.Load(); n != 1 {
			t.Errorf("%d registrations together, the seed's memory stale, read it %d times; want once", crowd, n)
		}
	})
}
