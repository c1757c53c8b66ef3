// The cache's promises: the requests that miss together share one read (the second caller joins the
// first's read rather than reading again), and that shared read is not cut short by the first caller
// leaving; what was read is kept until the clock says its TTL is up.

package entry_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/overload"
)

func TestTheSecondCallerJoinsTheFirstsReadWhichOutlivesTheFirstCaller(t *testing.T) {
	sr := &slowRead{started: make(chan struct{}), again: make(chan struct{}), release: make(chan struct{})}
	now := time.Unix(1_000_000, 0)
	c := entry.NewCache(entry.RulesTTL, func() time.Time { return now }, sr.read)
	reads, started, again, release := &sr.reads, sr.started, sr.again, sr.release
	first, leave := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := c.Get(first, "s1")
		firstDone <- err
	}()
	<-started
	type result struct {
		r   entry.Rules
		err error
	}
	second := make(chan result, 1)
	go func() {
		r, err := c.Get(context.Background(), "s1")
		second <- result{r, err}
	}()
	// The second caller either reads again while the first's read is under way (it did not join), or
	// parks in Get waiting for that read: the test waits for whichever happens first.
	if !parkedInGet(t, again) {
		t.Fatal("the second caller read the rules again while the first's read was under way; want it to join that read")
	}
	leave()
	close(release)
	if got := <-second; got.err != nil || got.r.PowCost != 7 {
		t.Errorf("the second caller got %+v, %v; want the rules read, its first caller's leaving notwithstanding", got.r, got.err)
	}
	<-firstDone
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads for two callers that missed together, want 1", n)
	}
	if r, err := c.Get(context.Background(), "s1"); err != nil || r.PowCost != 7 || reads.Load() != 1 {
		t.Errorf("the kept rules = %+v, %v after %d reads; want those read, kept", r, err, reads.Load())
	}
}

// slowRead is a read of the rules that holds the first read until release, and closes again at the
// second.
type slowRead struct {
	reads                   atomic.Int32
	started, again, release chan struct{}
}

func (sr *slowRead) read(ctx context.Context, id string) (entry.Rules, error) {
	if sr.reads.Add(1) > 1 {
		close(sr.again)
		return entry.Rules{}, nil
	}
	close(sr.started)
	select {
	case <-sr.release:
		return entry.Rules{PowCost: 7}, ctx.Err()
	case <-ctx.Done():
		return entry.Rules{}, ctx.Err()
	}
}

// parkedInGet waits until a goroutine other than the reading one is blocked inside Cache.Get (true), or
// until again is closed (false): the stacks of every goroutine are the only way to see a caller that waits
// on a read it joined, since nothing of it returns until that read does.
func parkedInGet(t *testing.T, again <-chan struct{}) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for time.Now().Before(deadline) {
		select {
		case <-again:
			return false
		default:
		}
		n := runtime.Stack(buf, true)
		for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, "entry.(*Cache[") && strings.Contains(g, ").Get(") &&
				!strings.Contains(g, "(*slowRead).read(") && // the reading one
				!strings.Contains(header, "[running]") && !strings.Contains(header, "[runnable]") {
				return true
			}
		}
		time.Sleep(time.Millisecond) // polling the stacks: no event tells that a goroutine has parked
	}
	t.Fatal("no second caller in Get after 10s")
	return false
}

func TestKeptRulesAreReadAgainOnceTheClockPassesTheirTTL(t *testing.T) {
	var reads atomic.Int32
	now := time.Unix(1_000_000, 0)
	c := entry.NewCache(entry.RulesTTL, func() time.Time { return now }, func(ctx context.Context, id string) (entry.Rules, error) {
		return entry.Rules{PowCost: int(reads.Add(1))}, nil
	})
	get := func() int {
		r, err := c.Get(t.Context(), "s1")
		if err != nil {
			t.Fatal(err)
		}
		return r.PowCost
	}
	if got := get(); got != 1 {
		t.Fatalf("first Get = read %d, want 1", got)
	}
	now = now.Add(entry.RulesTTL - time.Nanosecond)
	if got := get(); got != 1 {
		t.Errorf("Get within the TTL = read %d, want the kept 1", got)
	}
	now = now.Add(time.Nanosecond)
	if got := get(); got != 2 {
		t.Errorf("Get once the TTL is up = read %d, want a new read, 2", got)
	}
	c.Forget("s1")
	if got := get(); got != 3 {
		t.Errorf("Get after Forget = read %d, want a new read, 3", got)
	}
}

func TestAReadTheDatabasesGateRefusedAnswersWhatWasKeptAndOnlyThat(t *testing.T) {
	var reads atomic.Int32
	var refuse atomic.Bool
	now := time.Unix(1_000_000, 0)
	c := entry.NewCache(entry.RulesTTL, func() time.Time { return now }, func(ctx context.Context, id string) (entry.Rules, error) {
		n := int(reads.Add(1))
		if refuse.Load() {
			return entry.Rules{}, fmt.Errorf("booking: database: %w", overload.ErrBusy)
		}
		return entry.Rules{PowCost: n}, nil
	})
	refuse.Store(true)
	if _, err := c.Get(t.Context(), "s2"); !errors.Is(err, overload.ErrBusy) {
		t.Fatalf("a refused first read = %v, want overload.ErrBusy: nothing was kept to answer", err)
	}
	refuse.Store(false)
	if r, err := c.Get(t.Context(), "s1"); err != nil || r.PowCost != 2 {
		t.Fatalf("Get = %+v, %v; want read 2", r, err)
	}
	now = now.Add(entry.RulesTTL)
	refuse.Store(true)
	if r, err := c.Get(t.Context(), "s1"); err != nil || r.PowCost != 2 {
		t.Errorf("Get past the TTL with the read refused = %+v, %v; want the kept rules (read 2)", r, err)
	}
	refuse.Store(false)
	if r, err := c.Get(t.Context(), "s1"); err != nil || r.PowCost != 4 {
		t.Errorf("the next Get = %+v, %v; want a new read (4): the refusal renewed nothing", r, err)
	}
	c.Forget("s1")
	refuse.Store(true)
	if _, err := c.Get(t.Context(), "s1"); !errors.Is(err, overload.ErrBusy) {
		t.Errorf("a refused read after Forget = %v, want overload.ErrBusy: an operator's change is never answered stale", err)
	}
}
