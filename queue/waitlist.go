// A sold-out screening's waitlist (docs/protocol.md 5.4): the line kept when the seats ran out (close.lua,
// AllHeld), the party size a waiting token asks for (SetParty), what happened to the offers the admission
// made (TakeOfferNews: offered, expired, taken), its figures for the operator (Waitlist), and which tokens
// have a socket open or are kept for an e-mail (Connected, Keep).

package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// offerTakenLua is the function finish.lua and keepslot.lua share (an order takes its offer), prepended
// to each.
//
//go:embed lua/offertaken.lua
var offerTakenLua string

// offerScan is how many waiting entries an offer round looks at, at most: past that many parties that do
// not fit, the round ends (the script's work stays bounded).
const offerScan = 200

// ErrNotWaiting: the token holds no place in the screening's line.
var ErrNotWaiting = errors.New("not waiting in the line")

// setPartyScript sets the party of a waiting token, only while it waits: KEYS waiting, party; ARGV token, n.
var setPartyScript = redis.NewScript(`if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
if ARGV[2] == '1' then
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1`)

// SetParty records that the waiting token waits for n seats (1 to the screening's max_seats, which the
// caller checks): a waitlist's offer round offers it n seats at once (admit.lua). ErrNotWaiting when the
// token is not waiting in the line.
func (q *Queue) SetParty(ctx context.Context, screening, token string, n int) error {
	if err := q.check(screening, token); err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("queue: party of %d", n)
	}
	k := q.keys(screening)
	ok, err := setPartyScript.Run(ctx, q.rdb, []string{k.waiting, k.party}, token, n).Int()
	if err != nil {
		return fmt.Errorf("queue: party in %s: %w", screening, err)
	}
	if ok == 0 {
		return fmt.Errorf("queue: party in %s: %w", screening, ErrNotWaiting)
	}
	return nil
}

// Party returns the party size the token waits for (1 when it set none).
func (q *Queue) Party(ctx context.Context, screening, token string) (int, error) {
	n, err := q.rdb.HGet(ctx, q.keys(screening).party, token).Int()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queue: party in %s: %w", screening, err)
	}
	return n, nil
}

// OfferNews is one thing that happened to a waitlist's offer.
type OfferNews struct {
	// Kind is "offered", "expired" or "taken".
	Kind  string
	Token string
	// Seats is how many seats were offered; Used (taken) how many the order holds.
	Seats, Used int
	// ExpiresAt is when the offer lapses (lapsed): with the token, it names the offer (pass.ID).
	ExpiresAt time.Time
}

// takeNewsScript pops at most ARGV[1] entries of the list KEYS[1] at once.
var takeNewsScript = redis.NewScript(`local out = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #out > 0 then
  redis.call('LTRIM', KEYS[1], #out, -1)
end
return out`)

// TakeOfferNews takes what happened to the screening's offers since the last call (at most max entries), in
// the order it happened, for the webhooks and the e-mails: each entry is taken by one caller.
func (q *Queue) TakeOfferNews(ctx context.Context, screening string, limit int) ([]OfferNews, error) {
	res, err := takeNewsScript.Run(ctx, q.rdb, []string{q.keys(screening).wlNews}, limit).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("queue: offers of %s: %w", screening, err)
	}
	out := make([]OfferNews, 0, len(res))
	for _, r := range res {
		f := strings.Fields(r)
		if len(f) < 3 {
			continue
		}
		n := OfferNews{Kind: f[0], Token: f[1]}
		n.Seats, _ = strconv.Atoi(f[2])
		if len(f) > 3 {
			v, _ := strconv.ParseInt(f[3], 10, 64)
			n.ExpiresAt = time.UnixMilli(v)
		}
		if len(f) > 4 {
			n.Used, _ = strconv.Atoi(f[4])
		}
		out = append(out, n)
	}
	return out, nil
}

// WaitlistFigures is the operator's view of a screening's waitlist.
type WaitlistFigures struct {
	// On is whether the line is a waitlist now (a sell-out kept it).
	On bool `json:"on"`
	// Length is how many wait on it.
	Length int64 `json:"length"`
	// OffersOut is how many offers are out now; Offered, Taken and Expired count them since the sale began.
	OffersOut int64 `json:"offers_out"`
	Offered   int64 `json:"offers_total"`
	Taken     int64 `json:"offers_taken"`
	Expired   int64 `json:"offers_expired"`
	// Offerable is how many seats came back and are not offered yet.
	Offerable int64 `json:"seats_offerable"`
}

// Waitlist reads the screening's waitlist figures.
func (q *Queue) Waitlist(ctx context.Context, screening string) (WaitlistFigures, error) {
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	on := pipe.Exists(ctx, k.wl)
	length := pipe.ZCard(ctx, k.waiting)
	out := pipe.HLen(ctx, k.offers)
	stats := pipe.HMGet(ctx, k.stats, "offered", "offers_taken", "offers_expired")
	offerable := pipe.Get(ctx, k.offerable)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return WaitlistFigures{}, fmt.Errorf("queue: waitlist of %s: %w", screening, err)
	}
	f := WaitlistFigures{On: on.Val() == 1, Length: length.Val(), OffersOut: out.Val()}
	counts := []*int64{&f.Offered, &f.Taken, &f.Expired}
	for i, v := range stats.Val() {
		if s, ok := v.(string); ok {
			*counts[i], _ = strconv.ParseInt(s, 10, 64)
		}
	}
	f.Offerable, _ = offerable.Int64()
	return f, nil
}

// Connected reports, for each token, whether it has a socket open on some instance now.
func (q *Queue) Connected(ctx context.Context, screening string, tokens []string) ([]bool, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	res, err := q.rdb.HMGet(ctx, q.keys(screening).conns, tokens...).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: sockets of %s: %w", screening, err)
	}
	out := make([]bool, len(tokens))
	for i, v := range res {
		if s, ok := v.(string); ok {
			n, _ := strconv.Atoi(s)
			out[i] = n > 0
		}
	}
	return out, nil
}

// Kept reports, for each token, whether it is kept for an e-mail (Keep).
func (q *Queue) Kept(ctx context.Context, screening string, tokens []string) ([]bool, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	members := make([]any, len(tokens))
	for i, t := range tokens {
		members[i] = t
	}
	out, err := q.rdb.SMIsMember(ctx, q.keys(screening).keep, members...).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: kept in %s: %w", screening, err)
	}
	return out, nil
}

// Keep marks the token as one that left an e-mail address (keep) or no longer has one: a kept token is
// never dropped as abandoned while it waits with no socket open (admit.lua), since it is told by e-mail.
func (q *Queue) Keep(ctx context.Context, screening, token string, keep bool) error {
	if err := q.check(screening, token); err != nil {
		return err
	}
	k := q.keys(screening)
	var err error
	if keep {
		err = q.rdb.SAdd(ctx, k.keep, token).Err()
	} else {
		err = q.rdb.SRem(ctx, k.keep, token).Err()
	}
	if err != nil {
		return fmt.Errorf("queue: keep in %s: %w", screening, err)
	}
	return nil
}

// Holds reports whether the token holds a place in the screening's line: waiting, in the pre-queue, or
// admitted with its slot still running.
func (q *Queue) Holds(ctx context.Context, screening, token string) (bool, error) {
	if err := q.check(screening, token); err != nil {
		return false, err
	}
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	w := pipe.ZScore(ctx, k.waiting, token)
	p := pipe.ZScore(ctx, k.pre, token)
	a := pipe.ZScore(ctx, k.active, token)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("queue: place in %s: %w", screening, err)
	}
	if w.Err() == nil || p.Err() == nil {
		return true, nil
	}
	return a.Err() == nil && int64(a.Val()) > q.now().UnixMilli(), nil
}
