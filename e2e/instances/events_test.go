// The admission events as the test's own subscription heard them.

package instances

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// event is an admission event as the test's own subscription saw it.
type event struct {
	queue.Event
	at time.Time
}

// eventLog is what the test's subscription to the screening's events received.
type eventLog struct {
	mu  sync.Mutex
	evs []event
}

func (e *eventLog) snapshot() []event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.evs)
}

// observe subscribes to the screening's admission events the way the instances do (sharded pub/sub on
// Redis 7, classic otherwise: both are followed), so the test knows every event's epoch, tick time, admitted
// tokens and line.
func observe(t *testing.T, env *testenv.Env) (*eventLog, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	channel := queue.Key(env.Prefix, screening, "events")
	subs := []*redis.PubSub{env.Redis.SSubscribe(ctx, channel), env.Redis.Subscribe(ctx, channel)}
	for _, ps := range subs {
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatalf("subscribe %s: %v", channel, err)
		}
	}
	e := &eventLog{}
	var wg sync.WaitGroup
	for _, ps := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range ps.Channel() {
				if m.Payload == "" {
					continue // the instances' probe of the pub/sub mode
				}
				var ev queue.Event
				if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
					t.Errorf("event %q: %v", m.Payload, err)
					continue
				}
				e.mu.Lock()
				e.evs = append(e.evs, event{Event: ev, at: time.Now()})
				e.mu.Unlock()
			}
		}()
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			for _, ps := range subs {
				ps.Close()
			}
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return e, stop
}

func epochs(evs []event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Epoch
	}
	return out
}

// seqOfAdmitted is the sequence number of a token admitted before anyone left: admission takes the
// numbers after the head in order, so the i-th admitted of an event holds head − #admitted + 1 + i.
func seqOfAdmitted(evs []event, token string) (float64, error) {
	for _, ev := range evs {
		if i := slices.Index(ev.Admitted, token); i >= 0 {
			return float64(ev.Head - int64(len(ev.Admitted)) + 1 + int64(i)), nil
		}
	}
	return 0, fmt.Errorf("token %s neither waiting nor admitted by an event", token)
}
