// A public randomness beacon mixed into the pre-queue's shuffle (docs/fairness.md, "The beacon"): when a
// pre-queue's seed is drawn, its commitment names the beacon's round that will be mixed in (the first due at
// or after the sale time, which nobody knows then, the server included); at the opening, that round is
// fetched (the line waits for it, a bounded while) and each entry's key comes from SHA-256(seed ‖ the
// round's randomness), computed here since Redis's Lua has no HMAC (open.lua takes the order).
//
// When the beacon cannot be reached, the line is not held up: a seed drawn then names no round (its
// commitment says beacon=none), and an opening that cannot fetch its round in time orders the pre-queue by
// the seed alone and says so (randomness=none). Either is logged as a warning and counted
// (waitroom_queue_beacon_misses_total), and the verifier reports it.

package queue

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/fairlog"
)

const (
	// beaconFetchTimeout bounds one request to the beacon.
	beaconFetchTimeout = 2 * time.Second
	// beaconInfoRetry: a chain info fetch that failed is not tried again within this, so an early crowd's
	// registrations do not each wait for a beacon that is down.
	beaconInfoRetry = time.Second
	// beaconPatience is how long after its round is due an opening goes on asking the beacon for it,
	// before it opens with the seed alone. drand publishes a round within a second or so of its time.
	beaconPatience = 10 * time.Second
	// beaconPoll is the pause between two asks for a round not published yet.
	beaconPoll = 250 * time.Millisecond
	// openTries bounds the openings refused because an entry came in between the read of the pre-queue
	// and the script (each retry reads it again); the scheduler tries again at its next tick after that.
	openTries = 5
)

// beaconSource is the beacon the seeds name: its chain info, fetched once and kept (a chain's info never
// changes, and its hash is in the URL, which the info is checked against).
type beaconSource struct {
	beacon   fairlog.Beacon
	client   *http.Client
	log      *slog.Logger
	patience time.Duration

	// beforeOpen, when set (a test's), runs between the read of the pre-queue and open.lua, each try.
	beforeOpen func(try int)

	mu      sync.Mutex // held while fetching, so a crowd's first arrivals fetch once
	info    *fairlog.ChainInfo
	failed  time.Time // when the last fetch failed
	lastErr error
}

// SetBeacon makes every pre-queue seed drawn from now on name a round of beacon, mixed in at the opening
// (only when the log is kept: SetLog). client makes the requests; log says when the beacon could not be
// used. Call it before the queue is used.
func (q *Queue) SetBeacon(beacon fairlog.Beacon, client *http.Client, log *slog.Logger) {
	q.beacon = &beaconSource{beacon: beacon, client: client, log: log, patience: beaconPatience}
}

// chain returns the beacon's chain info, fetching it the first time.
func (b *beaconSource) chain(ctx context.Context) (fairlog.ChainInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.info != nil {
		return *b.info, nil
	}
	if b.lastErr != nil && time.Since(b.failed) < beaconInfoRetry {
		return fairlog.ChainInfo{}, b.lastErr
	}
	ctx, cancel := context.WithTimeout(ctx, beaconFetchTimeout)
	defer cancel()
	info, err := b.beacon.Info(ctx, b.client)
	if err != nil {
		b.failed, b.lastErr = time.Now(), err
		return fairlog.ChainInfo{}, err
	}
	b.info = &info
	return info, nil
}

// beaconRound is what a seed drawn now for a sale at opensAt names: "URL round" to keep in Redis and the
// commitment's fields. A beacon that cannot be reached names none (" beacon=none"), with a warning: the
// registrations go on, and the log says plainly that the order will follow from the seed alone.
func (q *Queue) beaconRound(ctx context.Context, screening string, opensAt time.Time) (named, fields string) {
	info, err := q.beacon.chain(ctx)
	if err != nil {
		q.beaconMissed(screening, "commit")
		q.beacon.log.Warn("fairness: the beacon could not be reached when the pre-queue's seed was drawn; its commitment names no round (beacon=none)",
			"screening", screening, "beacon", q.beacon.beacon.URL, "err", err)
		return "", " beacon=" + fairlog.NoBeacon
	}
	round := strconv.FormatInt(info.FirstRoundFrom(opensAt), 10)
	return q.beacon.beacon.URL + " " + round, " beacon=" + q.beacon.beacon.URL + " round=" + round
}

func (q *Queue) beaconMissed(screening, stage string) {
	if q.metrics != nil && q.metrics.BeaconMisses != nil {
		q.metrics.BeaconMisses.WithLabelValues(screening, stage).Inc()
	}
}

// mixing is what an opening mixes in: the round the commitment named, and, once fetched, the round's
// values, the mixed seed and when the round was due.
type mixing struct {
	round   int64
	fetched *fairlog.Round
	mixed   []byte
	dueMs   int64
}

// revealFields are the reveal's beacon fields (open.lua appends them).
func (m *mixing) revealFields() string {
	if m == nil {
		return ""
	}
	if m.fetched == nil {
		return " round=" + strconv.FormatInt(m.round, 10) + " randomness=" + fairlog.NoBeacon
	}
	return " round=" + strconv.FormatInt(m.round, 10) + " randomness=" + m.fetched.Randomness + " signature=" + m.fetched.Signature
}

// mixFor reads the beacon round the screening's commitment named and fetches it, waiting until it is due
// and then up to the beacon's patience. It returns nil when the commitment named none; a mixing without
// fetched when the round could not be had in time (logged and counted: the seed alone orders). A line
// already open or closed needs no round: nil.
func (q *Queue) mixFor(ctx context.Context, screening string) (*mixing, error) {
	k := q.keys(screening)
	vals, err := q.rdb.MGet(ctx, k.beacon, k.seed, k.opened, k.closed).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: the beacon round of %s: %w", screening, err)
	}
	named, _ := vals[0].(string)
	seedHex, _ := vals[1].(string)
	url, roundText, ok := strings.Cut(named, " ")
	if !ok || seedHex == "" || vals[2] != nil || vals[3] != nil {
		return nil, nil
	}
	m := &mixing{}
	if m.round, err = strconv.ParseInt(roundText, 10, 64); err != nil {
		return nil, fmt.Errorf("queue: the beacon round of %s: %q", screening, named)
	}
	src := q.beacon
	if src == nil || src.beacon.URL != url {
		// Another instance named this beacon (its settings differ from this one's): fetch from it all the same.
		b, err := fairlog.ParseBeacon(url)
		if err != nil {
			return nil, fmt.Errorf("queue: the beacon of %s: %w", screening, err)
		}
		src = &beaconSource{beacon: b, client: &http.Client{Timeout: beaconFetchTimeout}, log: slog.Default(), patience: beaconPatience}
		if q.beacon != nil {
			src.log, src.patience = q.beacon.log, q.beacon.patience
		}
	}
	round, due, err := src.fetch(ctx, m.round, q.now())
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("queue: the beacon round of %s: %w", screening, ctx.Err())
		}
		q.beaconMissed(screening, "open")
		src.log.Warn("fairness: the beacon's round could not be fetched for the opening; the pre-queue is ordered by its seed alone (randomness=none)",
			"screening", screening, "beacon", url, "round", m.round, "err", err)
		return m, nil
	}
	seed, err := hex.DecodeString(seedHex)
	if err != nil {
		return nil, fmt.Errorf("queue: the shuffle seed of %s: %w", screening, err)
	}
	m.fetched, m.mixed, m.dueMs = &round, fairlog.MixSeed(seed, round.Randomness), due.UnixMilli()
	return m, nil
}

// fetch gets round r: not before it is due, then again every beaconPoll until the patience after its time
// (or after now, when the chain info itself cannot be had) has passed.
func (b *beaconSource) fetch(ctx context.Context, r int64, now time.Time) (fairlog.Round, time.Time, error) {
	giveUp := now.Add(b.patience)
	for {
		info, err := b.chain(ctx)
		if err == nil {
			due := info.TimeOfRound(r)
			giveUp = due.Add(b.patience)
			if wait := time.Until(due); wait > 0 {
				if err := sleep(ctx, wait); err != nil {
					return fairlog.Round{}, time.Time{}, err
				}
			}
			fetchCtx, cancel := context.WithTimeout(ctx, beaconFetchTimeout)
			var round fairlog.Round
			round, err = b.beacon.Round(fetchCtx, b.client, info, r)
			cancel()
			if err == nil {
				return round, due, nil
			}
			if errors.Is(err, fairlog.ErrBeacon) {
				return fairlog.Round{}, time.Time{}, err // the beacon answered with what is not its chain's: no use asking again
			}
		}
		if time.Now().After(giveUp) {
			return fairlog.Round{}, time.Time{}, err
		}
		if err := sleep(ctx, beaconPoll); err != nil {
			return fairlog.Round{}, time.Time{}, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// mixedOrder reads the pre-queue's entries and orders those that came before the round was due by their
// keys from the mixed seed (then by entry number, for equal keys): the tokens open.lua places first. The
// entries that came later are open.lua's to place after them, by number.
func (q *Queue) mixedOrder(ctx context.Context, screening string, m *mixing) ([]any, error) {
	infos, err := q.rdb.HGetAll(ctx, q.keys(screening).preinfo).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("queue: read the pre-queue of %s: %w", screening, err)
	}
	type keyed struct {
		token string
		n     int64
		key   uint64
	}
	early := make([]keyed, 0, len(infos))
	for token, info := range infos {
		f := strings.Fields(info) // "entry time hash"
		if len(f) != 3 {
			continue
		}
		n, err1 := strconv.ParseInt(f[0], 10, 64)
		at, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || at >= m.dueMs {
			continue
		}
		early = append(early, keyed{token: token, n: n, key: fairlog.ShuffleKey(m.mixed, f[2])})
	}
	slices.SortFunc(early, func(a, b keyed) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return int(a.n - b.n)
	})
	out := make([]any, len(early))
	for i, e := range early {
		out[i] = e.token
	}
	return out, nil
}
