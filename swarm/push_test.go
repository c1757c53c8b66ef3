// Tests of the push report (latency per tick, catch-ups, missed ticks, registration) on synthetic results,
// and of the fast position decoder against encoding/json.

package swarm

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// base is the synthetic runs' clock: tick k is at base+k seconds.
var base = time.UnixMilli(1_800_000_000_000)

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// pos is a position of the tick at base+tickMs, received latencyMs later.
func pos(tickMs, latencyMs int) position {
	return position{TickAtMs: at(tickMs).UnixMilli(), Latency: time.Duration(latencyMs) * time.Millisecond}
}

// first marks p as the first message after queued.
func first(p position) position {
	p.AfterQueued = true
	return p
}

func waited(fromMs, toMs int) window { return window{From: at(fromMs), To: at(toMs)} }

func TestPushGroupsLatenciesByTick(t *testing.T) {
	// Three users waiting from 0 to 3500 ms; ticks at 1000, 2000 and 3000.
	results := []result{
		{Positions: []position{pos(1000, 10), pos(2000, 40), pos(3000, 5)}, Windows: []window{waited(0, 3500)}},
		{Positions: []position{pos(1000, 20), pos(2000, 50), pos(3000, 5)}, Windows: []window{waited(0, 3500)}},
		{Positions: []position{pos(1000, 30), pos(2000, 60), pos(3000, 5)}, Windows: []window{waited(0, 3500)}},
	}
	p := summarizePush(results)
	if p.Ticks != 3 || p.CatchUps != 0 {
		t.Errorf("Ticks, CatchUps = %d, %d; want 3, 0", p.Ticks, p.CatchUps)
	}
	want := []TickLatency{
		{TickAtMs: at(1000).UnixMilli(), Count: 3, P50Ms: 20, P99Ms: 30, MaxMs: 30},
		{TickAtMs: at(2000).UnixMilli(), Count: 3, P50Ms: 50, P99Ms: 60, MaxMs: 60},
		{TickAtMs: at(3000).UnixMilli(), Count: 3, P50Ms: 5, P99Ms: 5, MaxMs: 5},
	}
	if len(p.PerTick) != len(want) {
		t.Fatalf("PerTick = %+v, want %+v", p.PerTick, want)
	}
	for i := range want {
		if p.PerTick[i] != want[i] {
			t.Errorf("PerTick[%d] = %+v, want %+v", i, p.PerTick[i], want[i])
		}
	}
	// Nine samples: 5 5 5 10 20 30 40 50 60.
	if want := (Latency{Count: 9, P50Ms: 20, P95Ms: 60, P99Ms: 60, MaxMs: 60}); p.Positions != want {
		t.Errorf("Positions = %+v, want %+v", p.Positions, want)
	}
	if p.UsersWithPosition != 3 || p.UsersWithEveryTick != 3 || p.MissedTicks != 0 || p.UsersMissingTicks != 0 {
		t.Errorf("with position %d, every tick %d, missed %d by %d; want 3, 3, 0 by 0", p.UsersWithPosition, p.UsersWithEveryTick, p.MissedTicks, p.UsersMissingTicks)
	}
}

func TestMissedTicksCountOnlyTicksAUserShouldHaveGot(t *testing.T) {
	everyone := func(ticks ...int) []position {
		var out []position
		for _, tk := range ticks {
			out = append(out, pos(tk, 10))
		}
		return out
	}
	for _, tc := range []struct {
		name                   string
		user                   result // beside three users who got every tick 1000…4000 within 10 ms
		wantMissed, wantUsers  int
		wantEvery, wantWithPos int
	}{
		{
			name: "got every tick",
			user: result{Positions: everyone(1000, 2000, 3000, 4000), Windows: []window{waited(0, 5000)}},
			// four users with every tick, no miss
			wantEvery: 4, wantWithPos: 4,
		},
		{
			name:       "one tick dropped",
			user:       result{Positions: everyone(1000, 3000, 4000), Windows: []window{waited(0, 5000)}},
			wantMissed: 1, wantUsers: 1, wantEvery: 3, wantWithPos: 4,
		},
		{
			name:       "no position at all while waiting",
			user:       result{Windows: []window{waited(0, 5000)}},
			wantMissed: 4, wantUsers: 1, wantEvery: 3, wantWithPos: 3,
		},
		{
			name: "ticks before its queued message are not its",
			user: result{Positions: everyone(3000, 4000), Windows: []window{waited(2500, 5000)}},
			// queued at 2500: ticks 1000 and 2000 were before it
			wantEvery: 4, wantWithPos: 4,
		},
		{
			name: "the tick that admitted it sends no position, nor do later ones",
			user: result{Positions: everyone(1000), Windows: []window{{From: at(0), To: at(2015), Admitted: true}}},
			// admitted at tick 2000 (the message arrived at 2015); 3000 and 4000 came after
			wantEvery: 4, wantWithPos: 4,
		},
		{
			name:       "admitted at tick 3000 but tick 2000 missing",
			user:       result{Positions: everyone(1000), Windows: []window{{From: at(0), To: at(3015), Admitted: true}}},
			wantMissed: 1, wantUsers: 1, wantEvery: 3, wantWithPos: 4,
		},
		{
			name: "a tick still being delivered when it closed",
			user: result{Positions: everyone(1000, 2000, 3000), Windows: []window{waited(0, 4005)}},
			// tick 4000 reached the others at 4010, after this user closed at 4005
			wantEvery: 4, wantWithPos: 4,
		},
		{
			name:       "a tick delivered to everyone before it closed",
			user:       result{Positions: everyone(1000, 2000, 3000), Windows: []window{waited(0, 4011)}},
			wantMissed: 1, wantUsers: 1, wantEvery: 3, wantWithPos: 4,
		},
		{
			name:      "the ticks while it reconnected are not its",
			user:      result{Positions: everyone(1000, 4000), Windows: []window{waited(0, 1500), waited(3500, 5000)}},
			wantEvery: 4, wantWithPos: 4,
		},
		{
			name:       "a tick missed on its second connection",
			user:       result{Positions: everyone(1000), Windows: []window{waited(0, 1500), waited(3500, 5000)}},
			wantMissed: 1, wantUsers: 1, wantEvery: 3, wantWithPos: 4,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := []result{tc.user}
			for range 3 {
				results = append(results, result{Positions: everyone(1000, 2000, 3000, 4000), Windows: []window{waited(0, 5000)}})
			}
			p := summarizePush(results)
			if p.Ticks != 4 {
				t.Errorf("Ticks = %d, want 4", p.Ticks)
			}
			if p.MissedTicks != tc.wantMissed || p.UsersMissingTicks != tc.wantUsers || p.UsersWithEveryTick != tc.wantEvery || p.UsersWithPosition != tc.wantWithPos {
				t.Errorf("missed %d by %d, every tick %d, with position %d; want %d by %d, %d, %d",
					p.MissedTicks, p.UsersMissingTicks, p.UsersWithEveryTick, p.UsersWithPosition,
					tc.wantMissed, tc.wantUsers, tc.wantEvery, tc.wantWithPos)
			}
		})
	}
}

// TestATickWhoseRanksWereReadAfterTheAdmissionIsNotMissed: the server reads a tick's ranks before sending
// any of its positions, so a user admitted by a later tick (a refill) before that read gets no position.
func TestATickWhoseRanksWereReadAfterTheAdmissionIsNotMissed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		latencyMs int // of tick 2000, for everyone who got it
		want      int
	}{
		{"first position of the tick after the admission", 10, 0},
		{"first position of the tick before the admission", 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The user got tick 1000, then admitted by the refill at 2005 (the message arrived at 2008).
			results := []result{{Positions: []position{pos(1000, 10)}, Windows: []window{{From: at(0), To: at(2008), Admitted: true}}}}
			for range 3 {
				results = append(results, result{
					Positions: []position{pos(1000, 10), pos(2000, tc.latencyMs), pos(2005, 1), pos(3000, 10)},
					Windows:   []window{waited(0, 5000)},
				})
			}
			p := summarizePush(results)
			if p.Ticks != 4 || p.MissedTicks != tc.want {
				t.Errorf("ticks %d, missed %d; want 4 and %d", p.Ticks, p.MissedTicks, tc.want)
			}
		})
	}
}

func TestCatchUpIsNotATickButAFirstTickAfterABurstIs(t *testing.T) {
	results := []result{
		// Queued at 1200; the catch-up of its connect says 1201. Then tick 2000.
		{Positions: []position{first(pos(1201, 1)), pos(2000, 10)}, Windows: []window{waited(1200, 3000)}},
	}
	// Three more users, queued before 1201, whose first position is tick 2000: right after their queued
	// message, as everyone's is when they all register before the first tick.
	for range 3 {
		results = append(results, result{Positions: []position{first(pos(2000, 10))}, Windows: []window{waited(500, 3000)}})
	}
	p := summarizePush(results)
	if p.Ticks != 1 || p.CatchUps != 1 || len(p.PerTick) != 1 || p.PerTick[0].TickAtMs != at(2000).UnixMilli() || p.PerTick[0].Count != 4 {
		t.Errorf("Ticks %d, CatchUps %d, PerTick %+v; want the one tick at 2000 got by 4, and 1 catch-up", p.Ticks, p.CatchUps, p.PerTick)
	}
	if p.MissedTicks != 0 || p.Positions.Count != 5 {
		t.Errorf("MissedTicks %d, Positions.Count %d; want 0 (nobody misses a catch-up) and 5", p.MissedTicks, p.Positions.Count)
	}
}

// TestMarkedCatchUpIsNeverATick: after an unavailable/available pair a reconnect's catch-up does not come
// right after queued; the server's mark still keeps it out of the ticks, however many users got it.
func TestMarkedCatchUpIsNeverATick(t *testing.T) {
	var results []result
	for range 4 {
		catchUp := pos(1500, 2)
		catchUp.CatchUp = true
		results = append(results, result{Positions: []position{first(pos(1000, 10)), catchUp, pos(2000, 10)}, Windows: []window{waited(500, 3000)}})
	}
	p := summarizePush(results)
	if p.Ticks != 2 || p.CatchUps != 4 || p.PerTick[0].TickAtMs != at(1000).UnixMilli() || p.PerTick[1].TickAtMs != at(2000).UnixMilli() {
		t.Errorf("Ticks %d, CatchUps %d, PerTick %+v; want ticks 1000 and 2000, and 4 catch-ups", p.Ticks, p.CatchUps, p.PerTick)
	}
	if p.MissedTicks != 0 || p.UsersWithEveryTick != 4 {
		t.Errorf("MissedTicks %d, UsersWithEveryTick %d; want 0 and 4", p.MissedTicks, p.UsersWithEveryTick)
	}
}

func TestRegistrationIsFromTheFirstDialToTheLastQueued(t *testing.T) {
	results := []result{
		{FirstDialAt: at(100), RegisteredAt: at(300)},
		{FirstDialAt: at(50), RegisteredAt: at(550)},
		{FirstDialAt: at(60), RegisteredAt: at(250)},
		{FirstDialAt: at(70)}, // never registered
		{},                    // never started
	}
	got := summarizeRegistration(results)
	want := Registration{Registered: 3, FirstDialAtMs: at(50).UnixMilli(), BurstMs: 500, ArrivalMs: 500, PerSecond: 6}
	if got != want {
		t.Errorf("summarizeRegistration = %+v, want %+v", got, want)
	}
	if got := summarizeRegistration(nil); got != (Registration{}) {
		t.Errorf("summarizeRegistration(nil) = %+v, want zero", got)
	}
}

// TestDecodePositionAgreesWithEncodingJSON: the fast path reads what encoding/json reads, and leaves
// anything else to it.
func TestDecodePositionAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"type":"position","rank":3,"total":9,"tick_at":1764480000123}`,
		`{"type":"position","rank":1,"total":1,"tick_at":0}`,
		`{"type":"position","rank":3,"total":9,"tick_at":1764480000123,"eta_seconds":42}`,
		`{"type":"position","rank":3,"total":9,"tick_at":1764480000123,"eta_seconds":0}`,
	} {
		got, ok := decodePosition([]byte(in))
		var want message
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("decodePosition(%s) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{
		`{"type":"queued","token":"x","rank":1,"total":1,"inserted":true}`,
		`{"type":"position","rank":3,"total":9,"tick_at":"soon"}`,
		`{"type":"position","rank":3}`,
		`{"type":"position","tick_at":12`,
		`{"type":"position","rank":3,"total":9,"tick_at":-1}`,
		`{"type":"position","rank":3,"total":9,"tick_at":17,"eta_seconds":}`,
		`{"type":"position","rank":3,"total":9,"tick_at":17,"eta_seconds":"soon"}`,
		`{"type":"position","rank":3,"total":9,"tick_at":17,"eta_seconds":4,"x":1}`,
		`{"type":"position","rank":3,"total":9,"eta_seconds":4}`,
	} {
		if m, ok := decodePosition([]byte(in)); ok {
			t.Errorf("decodePosition(%s) = %+v, true; want it left to encoding/json", in, m)
		}
	}
}
