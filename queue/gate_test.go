// Tests of the gate's direct admission: exactly max_active under concurrent calls, never ahead of anyone
// waiting, nobody let in while the line is paused, closed, or not yet open, and a slot a pass can use.

package queue_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// reasonOf is the reason of a refused direct admission, "" when err is none.
func reasonOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var de *queue.DirectError
	if !errors.As(err, &de) || !errors.Is(err, queue.ErrNoDirect) {
		t.Fatalf("AdmitDirect error %v, want a *DirectError", err)
	}
	return de.Reason
}

func TestAdmitDirectNeverExceedsMaxActiveUnderConcurrentCalls(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		const maxActive, callers = 7, 40
		var mu sync.Mutex
		admitted, full := 0, 0
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				_, err := q.AdmitDirect(t.Context(), screening, time.Time{}, settings(10, maxActive))
				mu.Lock()
				defer mu.Unlock()
				switch reasonOf(t, err) {
				case "":
					admitted++
				case queue.DirectFull:
					full++
				default:
					t.Errorf("AdmitDirect refused with %v, want admitted or full", err)
				}
			})
		}
		wg.Wait()
		if admitted != maxActive || full != callers-maxActive {
			t.Errorf("%d admitted, %d full, want %d and %d", admitted, full, maxActive, callers-maxActive)
		}
		if got := zcard(t, env, screening, "active"); got != maxActive {
			t.Errorf("ZCARD active = %d, want %d", got, maxActive)
		}
	})
}

func TestAdmitDirectNeverGoesAheadOfTheWaiting(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		st := settings(10, 100)
		waiting := registerN(t, q, screening, 1)
		if _, err := q.AdmitDirect(t.Context(), screening, time.Time{}, st); reasonOf(t, err) != queue.DirectLine {
			t.Fatalf("AdmitDirect with one waiting = %v, want refused %q", err, queue.DirectLine)
		}
		if got := zcard(t, env, screening, "active"); got != 0 {
			t.Errorf("ZCARD active = %d after a refusal, want 0", got)
		}
		// Once the waiting one is admitted, the line is empty and there is room: the next comes straight in.
		s, _ := newScheduler(t, q, st, "a")
		res, err := s.Tick(t.Context(), screening, tickTimes()(1))
		if err != nil || len(res.Admitted) != 1 || res.Admitted[0] != waiting[0] {
			t.Fatalf("Tick = %+v, %v, want %s admitted", res, err, waiting[0])
		}
		d, err := q.AdmitDirect(t.Context(), screening, time.Time{}, st)
		if err != nil {
			t.Fatalf("AdmitDirect with nobody waiting: %v", err)
		}
		if d.Active != 2 || !queue.ValidToken(d.Token) {
			t.Errorf("AdmitDirect = %+v, want a new token and 2 active", d)
		}
	})
}

func TestAdmitDirectWhileRegistrationsArriveNeverJumpsAnyone(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		st := settings(10, 1000)
		// Registrations and direct admissions race; no tick runs, so whoever registered still waits. A direct
		// admission that started after a registration had returned must be refused.
		var registered atomic.Int64
		var jumped atomic.Int64
		var wg sync.WaitGroup
		for i := range 60 {
			if i%3 == 0 {
				wg.Go(func() {
					registerN(t, q, screening, 1)
					registered.Add(1)
				})
				continue
			}
			wg.Go(func() {
				before := registered.Load()
				_, err := q.AdmitDirect(t.Context(), screening, time.Time{}, st)
				if reasonOf(t, err) == "" && before > 0 {
					jumped.Add(1)
				}
			})
		}
		wg.Wait()
		if n := jumped.Load(); n != 0 {
			t.Errorf("%d direct admissions went ahead of a registered visitor, want 0", n)
		}
		if _, err := q.AdmitDirect(t.Context(), screening, time.Time{}, st); reasonOf(t, err) != queue.DirectLine {
			t.Errorf("AdmitDirect after the registrations = %v, want %q", err, queue.DirectLine)
		}
	})
}

func TestAdmitDirectRefusesPausedClosedAndNotYetOpenLines(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		st := settings(10, 100)
		ctx := t.Context()
		if _, err := q.AdmitDirect(ctx, "later", time.Now().Add(time.Hour), st); reasonOf(t, err) != queue.DirectNotOpen {
			t.Errorf("AdmitDirect before the sale = %v, want %q", err, queue.DirectNotOpen)
		}
		if err := q.Pause(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.AdmitDirect(ctx, "paused", time.Time{}, st); reasonOf(t, err) != queue.DirectPaused {
			t.Errorf("AdmitDirect while paused = %v, want %q", err, queue.DirectPaused)
		}
		if err := q.Resume(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.AdmitDirect(ctx, "paused", time.Time{}, st); err != nil {
			t.Errorf("AdmitDirect after the resume: %v", err)
		}
		if err := q.Close(ctx, "sold"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.AdmitDirect(ctx, "sold", time.Time{}, st); reasonOf(t, err) != queue.DirectClosed {
			t.Errorf("AdmitDirect when sold out = %v, want %q", err, queue.DirectClosed)
		}
	})
}

func TestAdmitDirectHoldsASlotItsPassCanUseAndFinishFreesIt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		passes := pass.NewSecretIssuer([]byte("a secret of thirty-two bytes ..."))
		st := settings(10, 1)
		ctx := t.Context()
		d, err := q.AdmitDirect(ctx, screening, time.Time{}, st)
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Now().Add(st.ActiveTTL); d.ExpiresAt.Before(want.Add(-2*time.Second)) || d.ExpiresAt.After(want.Add(time.Second)) {
			t.Errorf("ExpiresAt = %v, want about %v", d.ExpiresAt, want)
		}
		pass, err := passes.Issue(screening, d.Token, d.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		claims, err := passes.Verify(pass, screening)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.CheckPass(ctx, claims); err != nil {
			t.Fatalf("CheckPass of a direct admission: %v", err)
		}
		if _, err := q.AdmitDirect(ctx, screening, time.Time{}, st); reasonOf(t, err) != queue.DirectFull {
			t.Fatalf("AdmitDirect with the one slot taken = %v, want %q", err, queue.DirectFull)
		}
		if err := q.Finish(ctx, claims); err != nil {
			t.Fatal(err)
		}
		if err := q.CheckPass(ctx, claims); !errors.Is(err, queue.ErrPassSpent) {
			t.Errorf("CheckPass after Finish = %v, want ErrPassSpent", err)
		}
		if _, err := q.AdmitDirect(ctx, screening, time.Time{}, st); err != nil {
			t.Errorf("AdmitDirect after the slot was freed: %v", err)
		}
	})
}
