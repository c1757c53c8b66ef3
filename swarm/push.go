// What users saw of the line's pushes and of their registration: position latency tick by tick, catch-ups
// told apart from ticks, and the ticks a waiting user missed.

package swarm

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Push is what users saw of the line's pushes: how late position messages arrived after their tick, tick
// by tick, and which ticks a waiting user got no position for.
type Push struct {
	// Positions is the latency of every position message: its receipt less its tick_at.
	Positions Latency `json:"positions"`
	// Ticks counts the distinct ticks seen: tick_at values of position messages, less catch-ups.
	Ticks int `json:"ticks"`
	// CatchUps counts the position messages that were a connect's catch-up (docs/protocol.md 4.2: tick_at
	// is the server's clock then, not a tick): those the server marked catch_up, and, from a server that
	// does not mark them, a tick_at that every receiver got right after its queued message, and fewer than
	// half the users then waiting got.
	CatchUps int `json:"catch_ups"`
	// PerTick is every tick, in time order.
	PerTick []TickLatency `json:"per_tick,omitempty"`
	// UsersWithPosition counts the users that got at least one position message.
	UsersWithPosition int `json:"users_with_position"`
	// UsersWithEveryTick counts the registered users that missed no tick.
	UsersWithEveryTick int `json:"users_with_every_tick"`
	// MissedTicks sums, over users, the ticks a user missed: ticks after its queued message, delivered to
	// every other receiver before its connection ended, while it was not yet admitted, for which it got no
	// position. Not counted: the tick that admitted the user, and an earlier one whose first position was
	// sent only after that (the server may have read the ranks after the admission).
	MissedTicks int `json:"missed_ticks"`
	// UsersMissingTicks counts the users that missed at least one tick.
	UsersMissingTicks int `json:"users_missing_ticks"`
}

// TickLatency is the latency of one tick's position messages, in milliseconds.
type TickLatency struct {
	// TickAtMs is the tick's tick_at, Unix milliseconds.
	TickAtMs int64   `json:"tick_at_ms"`
	Count    int     `json:"count"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
}

// tickSeen is what the users got of one tick_at value.
type tickSeen struct {
	latencies []time.Duration
	// users counts the distinct receivers; lastUser is the last one counted (samples come user by user).
	users, lastUser int
	// pushed: someone got it other than right after its queued message, so it is a tick, not a catch-up.
	pushed bool
	// early counts the receivers whose connection got queued only after tick_at.
	early int
}

// tick is one tick as the missed-tick count needs it.
type tick struct {
	atMs int64
	// firstUs and lastUs are when its first and its last receiver got it (Unix µs). A user whose connection
	// ended before lastUs is not counted as missing it. The server reads the ranks of a tick before it
	// sends any: a user admitted by a later tick before firstUs may have been left out for that reason.
	firstUs, lastUs int64
}

func summarizePush(results []result) Push {
	seen, all := collectPositions(results)
	p := Push{Positions: summarizeLatency(all)}
	ticks := findTicks(seen, results)
	p.Ticks = len(ticks)
	p.CatchUps = len(all)
	for _, t := range ticks {
		lat := seen[t.atMs].latencies
		slices.Sort(lat)
		p.PerTick = append(p.PerTick, TickLatency{
			TickAtMs: t.atMs, Count: len(lat),
			P50Ms: millis(percentile(lat, 50)), P99Ms: millis(percentile(lat, 99)), MaxMs: millis(lat[len(lat)-1]),
		})
		p.CatchUps -= len(lat)
	}
	for _, r := range results {
		if len(r.Positions) > 0 {
			p.UsersWithPosition++
		}
		if len(r.Windows) == 0 {
			continue
		}
		switch n := missedTicks(r, ticks); n {
		case 0:
			p.UsersWithEveryTick++
		default:
			p.MissedTicks += n
			p.UsersMissingTicks++
		}
	}
	return p
}

// collectPositions groups the position messages by tick_at, and returns all their latencies too.
func collectPositions(results []result) (map[int64]*tickSeen, []time.Duration) {
	seen := map[int64]*tickSeen{}
	var all []time.Duration
	for u, r := range results {
		w := 0 // the window the position arrived in: positions and windows are both in time order
		for _, pos := range r.Positions {
			all = append(all, pos.Latency)
			if pos.CatchUp {
				continue // the server says it is no tick's: it counts among CatchUps only
			}
			t := seen[pos.TickAtMs]
			if t == nil {
				t = &tickSeen{lastUser: -1}
				seen[pos.TickAtMs] = t
			}
			t.latencies = append(t.latencies, pos.Latency)
			if t.lastUser != u {
				t.users, t.lastUser = t.users+1, u
			}
			if !pos.AfterQueued {
				t.pushed = true
				continue
			}
			receivedUs := pos.TickAtMs*1000 + pos.Latency.Microseconds()
			for w < len(r.Windows)-1 && r.Windows[w].To.UnixMicro() < receivedUs {
				w++
			}
			if w < len(r.Windows) && r.Windows[w].From.UnixMicro() >= pos.TickAtMs*1000 {
				t.early++
			}
		}
	}
	return seen, all
}

// findTicks returns the tick_at values that are ticks, in time order. A value someone got later than right
// after its queued message is one. A value that every receiver got right after queued may be the catch-up
// of a connect: it is a tick only if more than half the users waiting then got it (a tick goes to everyone
// waiting, a catch-up to the one that connected).
func findTicks(seen map[int64]*tickSeen, results []result) []tick {
	var fromUs, toUs []int64
	for _, r := range results {
		for _, w := range r.Windows {
			fromUs = append(fromUs, w.From.UnixMicro())
			toUs = append(toUs, w.To.UnixMicro())
		}
	}
	slices.Sort(fromUs)
	slices.Sort(toUs)
	// waitingAt counts the windows open at us: begun before it and not ended by then.
	waitingAt := func(us int64) int {
		begun, _ := slices.BinarySearch(fromUs, us)
		ended, found := slices.BinarySearch(toUs, us)
		for found && ended < len(toUs) && toUs[ended] == us {
			ended++
		}
		return begun - ended
	}
	var ticks []tick
	for at, t := range seen {
		if !t.pushed && 2*t.users <= waitingAt(at*1000)+t.early {
			continue
		}
		ticks = append(ticks, tick{
			atMs:    at,
			firstUs: at*1000 + slices.Min(t.latencies).Microseconds(),
			lastUs:  at*1000 + slices.Max(t.latencies).Microseconds(),
		})
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].atMs < ticks[j].atMs })
	return ticks
}

// missedTicks counts the ticks r's user missed: in each of its windows, the ticks after it got queued and
// delivered to everyone else before the window ended, for which it got no position. A window that ended
// in admission leaves out its last tick, taken as the one that admitted the user (it sends admitted, not
// position), and the earlier ticks whose ranks may have been read after that admission.
func missedTicks(r result, ticks []tick) int {
	got := make([]int64, len(r.Positions))
	for i, p := range r.Positions {
		got[i] = p.TickAtMs
	}
	slices.Sort(got)
	missed := 0
	for _, w := range r.Windows {
		fromUs, toUs := w.From.UnixMicro(), w.To.UnixMicro()
		lo := sort.Search(len(ticks), func(i int) bool { return ticks[i].atMs*1000 > fromUs })
		hi := sort.Search(len(ticks), func(i int) bool { return ticks[i].atMs*1000 > toUs })
		admittedUs := int64(math.MaxInt64)
		if w.Admitted && hi > lo {
			hi--
			admittedUs = ticks[hi].atMs * 1000
		}
		for _, t := range ticks[lo:hi] {
			if _, ok := slices.BinarySearch(got, t.atMs); !ok && t.lastUs <= toUs && t.firstUs < admittedUs {
				missed++
			}
		}
	}
	return missed
}

// Registration is how fast the users got their place: from the run's first arrival (its first challenge
// fetch when users solve a proof of work first, else its first dial) and from its first dial to the moment
// the last of them got its first queued message.
type Registration struct {
	// Registered counts the users that got a queued message (or a prequeue one, before the sale opened).
	Registered int `json:"registered"`
	// FirstDialAtMs is the run's first dial, Unix milliseconds; 0 if no user dialed.
	FirstDialAtMs int64 `json:"first_dial_at_ms"`
	// BurstMs is from the first dial to the last user's first queued message.
	BurstMs float64 `json:"burst_ms"`
	// ArrivalMs is from the first challenge fetch, or the first dial if it came first, to the last user's
	// first queued message: BurstMs and the solving before the first dial.
	ArrivalMs float64 `json:"arrival_ms"`
	// PerSecond is Registered over ArrivalMs.
	PerSecond float64 `json:"per_second"`
}

func summarizeRegistration(results []result) Registration {
	var reg Registration
	var first, arrived, last time.Time
	earliest := func(t *time.Time, at time.Time) {
		if !at.IsZero() && (t.IsZero() || at.Before(*t)) {
			*t = at
		}
	}
	for _, r := range results {
		earliest(&first, r.FirstDialAt)
		earliest(&arrived, r.FirstDialAt)
		earliest(&arrived, r.FirstChallengeAt)
		if !r.RegisteredAt.IsZero() {
			reg.Registered++
			if r.RegisteredAt.After(last) {
				last = r.RegisteredAt
			}
		}
	}
	if first.IsZero() {
		return reg
	}
	reg.FirstDialAtMs = first.UnixMilli()
	if reg.Registered == 0 {
		return reg
	}
	reg.BurstMs = millis(last.Sub(first))
	span := last.Sub(arrived)
	reg.ArrivalMs = millis(span)
	if span > 0 {
		reg.PerSecond = math.Round(float64(reg.Registered)/span.Seconds()*10) / 10
	}
	return reg
}
