// A property test of the line against a model: nobody is lost, and admission follows registration order.

package queue_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// lineModel is what the queue should hold, kept the simplest way: a slice for the line, a map for the
// active set.
type lineModel struct {
	now     time.Time
	waiting []string             // in line order
	active  map[string]time.Time // the active set as Redis holds it: a lapsed slot stays until a tick or a register drops it
	gone    map[string]string    // tokens in neither set, and why: "left", "finished" or "expired"
	tokens  []string             // every token ever registered, first registration first
	// mostActive is the largest max_active any tick has used.
	mostActive int
}

// state says which one of waiting / active / expired / left / finished tok is in.
func (m *lineModel) state(tok string) string {
	if slices.Contains(m.waiting, tok) {
		return "waiting"
	}
	if exp, ok := m.active[tok]; ok {
		if exp.After(m.now) {
			return "active"
		}
		return "expired"
	}
	return m.gone[tok]
}

// holding returns the tokens holding an unexpired slot, sorted so that rapid draws among them reproducibly.
func (m *lineModel) holding() []string {
	var out []string
	for tok, exp := range m.active {
		if exp.After(m.now) {
			out = append(out, tok)
		}
	}
	slices.Sort(out)
	return out
}

func (m *lineModel) enqueue(tok string) {
	delete(m.gone, tok)
	m.waiting = append(m.waiting, tok)
}

func (m *lineModel) drop(tok, why string) {
	delete(m.active, tok)
	m.gone[tok] = why
}

func TestLineNeverLosesAnyoneAndAdmitsInRegistrationOrder(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	p := pass.NewSecretIssuer(secret)
	ctx := context.Background()

	rapid.Check(t, func(rt *rapid.T) {
		id := testenv.Unique("p")
		q := queue.New(env.Redis, env.Prefix)
		// Start a minute ahead of the wall clock, which Passes.Verify reads, so no pass expires by its clock.
		m := &lineModel{
			now:    time.Now().Add(time.Minute).Truncate(time.Second),
			active: map[string]time.Time{}, gone: map[string]string{},
		}
		queue.SetNow(q, func() time.Time { return m.now })
		// The slot's length is the deployment's, fixed; batch and max_active vary from tick to tick. Ticks are
		// a second or more apart (see TestReadmissionGetsAFreshPass for why that matters).
		activeTTL := time.Duration(rapid.IntRange(1, 20).Draw(rt, "ttlSeconds")) * time.Second
		lastTick := int64(-1)

		register := func(rt *rapid.T, tok string) {
			e, err := q.Register(ctx, id, tok)
			if err != nil {
				rt.Fatalf("Register(%q): %v", tok, err)
			}
			if exp, ok := m.active[tok]; ok && exp.After(m.now) {
				if e.State != queue.Admitted || !e.ExpiresAt.Equal(exp) {
					rt.Fatalf("Register(%q) = %s expires %v, want %s expires %v", tok, e.State, e.ExpiresAt, queue.Admitted, exp)
				}
				return
			}
			delete(m.active, tok) // a lapsed slot is dropped, and its holder queues again at the end
			rank, inserted := slices.Index(m.waiting, tok), false
			if rank < 0 {
				m.enqueue(tok)
				rank, inserted = len(m.waiting)-1, true
			}
			if e.State != queue.Waiting || e.Inserted != inserted || e.ZeroBasedRank != int64(rank) || e.Total != int64(len(m.waiting)) {
				rt.Fatalf("Register(%q) = %s, inserted %v, rank %d of %d, want %s, %v, rank %d of %d",
					tok, e.State, e.Inserted, e.ZeroBasedRank, e.Total, queue.Waiting, inserted, rank, len(m.waiting))
			}
		}

		rt.Repeat(map[string]func(*rapid.T){
			"register new": func(rt *rapid.T) {
				tok := fmt.Sprintf("%032x", len(m.tokens)+1)
				m.tokens = append(m.tokens, tok)
				register(rt, tok)
			},
			"register again": func(rt *rapid.T) {
				if len(m.tokens) == 0 {
					rt.Skip("nobody registered yet")
				}
				register(rt, rapid.SampledFrom(m.tokens).Draw(rt, "token"))
			},
			"leave": func(rt *rapid.T) {
				if len(m.tokens) == 0 {
					rt.Skip("nobody registered yet")
				}
				tok := rapid.SampledFrom(m.tokens).Draw(rt, "token")
				got, err := q.Leave(ctx, id, tok)
				if err != nil {
					rt.Fatalf("Leave(%q): %v", tok, err)
				}
				_, held := m.active[tok]
				want := held || slices.Contains(m.waiting, tok)
				if got != want {
					rt.Fatalf("Leave(%q) in state %s = %v, want %v", tok, m.state(tok), got, want)
				}
				if want {
					m.waiting = slices.DeleteFunc(m.waiting, func(s string) bool { return s == tok })
					m.drop(tok, "left")
				}
			},
			"admit": func(rt *rapid.T) {
				// One admission per tick of a one-second interval, as the Scheduler's lock allows.
				if tickNo := m.now.Unix(); tickNo <= lastTick {
					rt.Skip("this second's tick already ran")
				} else {
					lastTick = tickNo
				}
				st := queue.Settings{
					BatchSize: rapid.IntRange(1, 5).Draw(rt, "batch"),
					MaxActive: rapid.IntRange(1, 8).Draw(rt, "maxActive"),
					ActiveTTL: activeTTL,
				}
				m.mostActive = max(m.mostActive, st.MaxActive)
				res, err := q.Admit(ctx, id, m.now, st)
				if err != nil {
					rt.Fatalf("Admit: %v", err)
				}

				for tok, exp := range m.active {
					if !exp.After(m.now) {
						m.drop(tok, "expired")
					}
				}
				var wantSkip queue.SkipReason
				var want []string
				room := min(st.BatchSize, st.MaxActive-len(m.active))
				switch {
				case len(m.waiting) == 0:
					wantSkip = queue.QueueEmpty
				case room <= 0:
					wantSkip = queue.ActiveCapacityReached
				default:
					want = slices.Clone(m.waiting[:min(room, len(m.waiting))])
				}
				if res.Skip != wantSkip || !slices.Equal(res.Admitted, want) {
					rt.Fatalf("Admit(batch %d, max %d) = skip %q, admitted %v, want skip %q, admitted %v (the earliest waiting)",
						st.BatchSize, st.MaxActive, res.Skip, res.Admitted, wantSkip, want)
				}
				if len(res.Admitted) > st.BatchSize {
					rt.Fatalf("Admit admitted %d, want at most batch_size %d", len(res.Admitted), st.BatchSize)
				}
				if len(res.Admitted) > 0 && res.Active > int64(st.MaxActive) {
					rt.Fatalf("Admit left %d active, want at most max_active %d", res.Active, st.MaxActive)
				}
				exp := queue.ExpiryOf(m.now, st.ActiveTTL)
				if len(want) > 0 && !res.ExpiresAt.Equal(exp) {
					rt.Fatalf("Admit ExpiresAt = %v, want %v", res.ExpiresAt, exp)
				}
				m.waiting = m.waiting[len(want):]
				for _, tok := range want {
					m.active[tok] = exp
				}
				if res.Active != int64(len(m.active)) || res.Waiting != int64(len(m.waiting)) {
					rt.Fatalf("Admit counts = %d active, %d waiting, want %d, %d", res.Active, res.Waiting, len(m.active), len(m.waiting))
				}
			},
			"finish": func(rt *rapid.T) {
				holding := m.holding()
				if len(holding) == 0 {
					rt.Skip("nobody holds a slot")
				}
				tok := rapid.SampledFrom(holding).Draw(rt, "token")
				pass, err := p.Issue(id, tok, m.active[tok])
				if err != nil {
					rt.Fatal(err)
				}
				c, err := p.Verify(pass, id)
				if err != nil {
					rt.Fatalf("Verify(pass of %s): %v", tok, err)
				}
				if err := q.CheckPass(ctx, c); err != nil {
					rt.Fatalf("CheckPass(%s) before Finish = %v, want nil", tok, err)
				}
				if err := q.Finish(ctx, c); err != nil {
					rt.Fatalf("Finish(%s): %v", tok, err)
				}
				if err := q.CheckPass(ctx, c); !errors.Is(err, queue.ErrPassSpent) {
					rt.Fatalf("CheckPass(%s) after Finish = %v, want %v", tok, err, queue.ErrPassSpent)
				}
				m.drop(tok, "finished")
			},
			"advance time": func(rt *rapid.T) {
				m.now = m.now.Add(time.Duration(rapid.Int64Range(0, 15_000).Draw(rt, "ms")) * time.Millisecond)
			},
			"": func(rt *rapid.T) { checkLine(rt, env, q, id, m) },
		})

		for _, tok := range m.tokens {
			e, err := q.Status(ctx, id, tok)
			if err != nil {
				rt.Fatal(err)
			}
			want := map[string]queue.State{"waiting": queue.Waiting, "active": queue.Admitted}[m.state(tok)]
			if want == "" {
				want = queue.Unknown
			}
			if e.State != want {
				rt.Errorf("Status(%q) = %s, want %s (model: %s)", tok, e.State, want, m.state(tok))
			}
			if want == queue.Waiting && e.ZeroBasedRank != int64(slices.Index(m.waiting, tok)) {
				rt.Errorf("Status(%q) rank = %d, want %d", tok, e.ZeroBasedRank, slices.Index(m.waiting, tok))
			}
		}
	})
}

// checkLine compares what Redis holds with the model after every step.
func checkLine(rt *rapid.T, env *testenv.Env, q *queue.Queue, id string, m *lineModel) {
	ctx := context.Background()
	waiting, err := env.Redis.ZRange(ctx, queue.Key(env.Prefix, id, "waiting"), 0, -1).Result()
	if err != nil {
		rt.Fatal(err)
	}
	if !slices.Equal(waiting, m.waiting) {
		rt.Fatalf("waiting = %v, want %v", waiting, m.waiting)
	}
	active, err := env.Redis.ZRangeWithScores(ctx, queue.Key(env.Prefix, id, "active"), 0, -1).Result()
	if err != nil {
		rt.Fatal(err)
	}
	gotActive := map[string]int64{}
	for _, z := range active {
		gotActive[z.Member.(string)] = int64(z.Score)
	}
	wantActive := map[string]int64{}
	for tok, exp := range m.active {
		wantActive[tok] = exp.UnixMilli()
	}
	if !maps.Equal(gotActive, wantActive) {
		rt.Fatalf("active = %v, want %v", gotActive, wantActive)
	}

	// Never lost: every token ever registered is in exactly one place.
	for _, tok := range m.tokens {
		_, inActive := gotActive[tok]
		if inActive && slices.Contains(waiting, tok) {
			rt.Fatalf("%s is both waiting and active", tok)
		}
		switch s := m.state(tok); s {
		case "waiting", "active", "expired", "left", "finished":
		default:
			rt.Fatalf("%s is in state %q, want one of waiting/active/expired/left/finished", tok, s)
		}
	}

	holding := int64(len(m.holding()))
	w, a, err := q.Counts(ctx, id)
	if err != nil {
		rt.Fatal(err)
	}
	if w != int64(len(m.waiting)) || a != holding {
		rt.Fatalf("Counts = %d waiting, %d active, want %d, %d", w, a, len(m.waiting), holding)
	}
	if a > int64(m.mostActive) && a > 0 {
		rt.Fatalf("Counts active = %d, want at most the largest max_active %d", a, m.mostActive)
	}

	ranks, total, err := q.Ranks(ctx, id, m.tokens)
	if err != nil {
		rt.Fatal(err)
	}
	if total != int64(len(m.waiting)) {
		rt.Fatalf("Ranks total = %d, want %d", total, len(m.waiting))
	}
	for i, tok := range m.tokens {
		if want := int64(slices.Index(m.waiting, tok)); ranks[i] != want {
			rt.Fatalf("Ranks(%q) = %d, want %d", tok, ranks[i], want)
		}
	}
}
