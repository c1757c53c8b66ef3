// Registration: a token enters a screening's line (Enter, Register), each of its sockets counted, and its
// sockets counted off when they close (Disconnected) or when a registration got no answer (Undo). The
// marks each leaves in Redis make a resent count-off, or a registration that arrives after its undoing,
// change nothing.

package queue

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/ids"
)

var (
	//go:embed lua/register.lua
	registerLua string
	//go:embed lua/disconnect.lua
	disconnectLua string

	registerScript   = redis.NewScript(registerLua)
	disconnectScript = redis.NewScript(disconnectLua)
)

// Register puts token in the line of a screening whose sale is open (see Enter).
func (q *Queue) Register(ctx context.Context, screening, token string) (Entry, error) {
	return q.Enter(ctx, screening, token, time.Time{})
}

// Enter puts token in the screening's line, or reports where it already stands: waiting (keeping its
// original place), in the pre-queue (Pre: the line opens at opensAt, when the pre-queue is shuffled; see
// Open), admitted (with the expiry of its slot), or closed (sold out: ErrClosed). An empty token gets a new
// random one. Each call counts one more socket of the token (see Disconnected).
//
// An error with the returned entry's Token set says the registration got no answer and may have run: the
// caller undoes it (Undo), so that a socket that never joined is not counted for ever, nor a fresh token,
// which its client never learnt, left in line for ever.
func (q *Queue) Enter(ctx context.Context, screening, token string, opensAt time.Time) (Entry, error) {
	return q.enter(ctx, screening, token, opensAt, randomID())
}

// enter is Enter with the registration's mark (register.lua) drawn by the caller.
func (q *Queue) enter(ctx context.Context, screening, token string, opensAt time.Time, mark string) (Entry, error) {
	if token == "" {
		token = NewToken()
	}
	if err := q.check(screening, token); err != nil {
		return Entry{}, err
	}
	k := q.keys(screening)
	hash := q.logHash(token)
	key, err := q.preKey(ctx, screening, hash, opensAt)
	if err != nil {
		return Entry{}, fmt.Errorf("queue: register in %s: %w", screening, err)
	}
	res, err := q.register(ctx,
		[]string{k.waiting, k.active, k.seq, k.closed, k.changed, k.epoch, k.pre, k.opened, k.paused, k.gone, k.conns, q.regMark(screening, mark), k.allHeld,
			k.log, k.pren, k.preinfo, k.placed, k.seed, k.numbering, k.wl, k.offers},
		token, q.now().UnixMilli(), opensAt.UnixMilli(), key, countOffMark.Milliseconds(), hash, int64(newNumbering()))
	if err != nil {
		var e Entry
		if errors.Is(err, ErrQueued) || unanswered(err) {
			e = Entry{Token: token, mark: mark}
		}
		return e, fmt.Errorf("queue: register in %s: %w", screening, err)
	}
	if res[0] == "undone" {
		return Entry{}, fmt.Errorf("queue: register in %s: undone before it ran", screening)
	}
	e := Entry{Token: token}
	switch res[0] {
	case "closed":
		e.State = Closed
		if why, _ := res[1].(string); why == ReasonClosed {
			e.ClosedReason = ReasonClosed
		} else {
			e.ClosedReason = ReasonSoldOut
		}
		return e, fmt.Errorf("queue: register in %s: %w", screening, ErrClosed)
	case "admitted":
		e.State = Admitted
		e.ExpiresAt, err = unixMilli(res[1])
		if len(res) > 2 {
			n, _ := res[2].(int64)
			e.Offer = int(n)
		}
	case "waiting", "pre":
		e.State = State(res[0].(string))
		e.ZeroBasedRank, e.Total = res[1].(int64), res[2].(int64)
		e.Inserted = res[3].(int64) == 1
		e.Seq, e.Epoch = res[4].(int64), res[5].(int64)
		e.Paused = res[6].(int64) == 1
		e.AllHeld = res[7].(int64) == 1
		if len(res) >= 10 && res[9].(int64) > 0 {
			e.Receipt = &Placed{At: time.UnixMilli(res[9].(int64))}
			if e.State == Pre {
				e.Receipt.Entry = res[8].(int64)
			} else {
				e.Receipt.Seq = res[8].(int64)
			}
		}
		if len(res) >= 11 {
			e.Numbering = Numbering(res[10].(int64))
		}
		if len(res) >= 12 {
			e.Waitlisted = res[11].(int64) == 1
		}
		if e.State == Pre {
			e.ZeroBasedRank = 0 // a place in the pre-queue means nothing until the shuffle
		}
	default:
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("queue: register in %s: %w", screening, err)
	}
	return e, nil
}

// register runs registerScript in the next pipeline and returns its reply.
func (q *Queue) register(ctx context.Context, keys []string, args ...any) ([]any, error) {
	res, err := q.runBatched(ctx, registerScript, keys, args...)
	if err != nil {
		return nil, err
	}
	out, ok := res.([]any)
	if !ok {
		return nil, fmt.Errorf("queue: register: a reply of %T, want an array", res)
	}
	return out, nil
}

func unixMilli(v any) (time.Time, error) {
	var ms float64
	switch x := v.(type) {
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return time.Time{}, err
		}
		ms = f
	case int64:
		ms = float64(x)
	default:
		return time.Time{}, fmt.Errorf("unexpected time %T %v", v, v)
	}
	return time.UnixMilli(int64(ms)), nil
}

// shuffleKey draws a pre-queue key uniformly from [0, 2^53), the integers a Redis score holds exactly: the
// order of independent uniform keys is a uniform random permutation (ties, 1 in 2^53 per pair, fall back
// to the token's order, itself random).
func shuffleKey() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 11)
}

// Disconnected counts off one socket of token. When it was the last and the token is still waiting, the
// token is noted gone: unless it registers again within the grace, the next tick (or the opening) drops it
// as abandoned.
//
// A count-off that gets no answer (Redis saturated, a connection broken) is sent again, up to
// countOffResends times: each carries a mark of its own in Redis (disconnect.lua), so one that did run and
// only lost its reply changes nothing the second time.
func (q *Queue) Disconnected(ctx context.Context, screening, token string) error {
	return q.countOff(ctx, screening, token, "")
}

// Undo undoes a registration that got no answer (Enter returned an error and an entry with its Token): if
// it ran, its socket is counted off, as Disconnected does (a fresh token is then noted gone, and dropped
// after the grace unless its client comes back with it); if it did not, it never will (its mark is set
// first, and the registration, should Redis still get it, does nothing). An entry without a Token, or one
// Enter returned without an error, has nothing to undo.
func (q *Queue) Undo(ctx context.Context, screening string, e Entry) error {
	if e.mark == "" {
		return nil
	}
	return q.countOff(ctx, screening, e.Token, q.regMark(screening, e.mark))
}

// regMark names the key that marks the registration mark ran (register.lua).
func (q *Queue) regMark(screening, mark string) string { return Key(q.prefix, screening, "reg:"+mark) }

// countOff runs disconnect.lua for one socket of token; with regMark, only if that registration ran.
func (q *Queue) countOff(ctx context.Context, screening, token, regMark string) error {
	if err := q.check(screening, token); err != nil {
		return err
	}
	k := q.keys(screening)
	keys := []string{k.waiting, k.pre, k.gone, k.conns, Key(q.prefix, screening, "off:"+randomID())}
	if regMark != "" {
		keys = append(keys, regMark)
	}
	if _, err := q.runResent(ctx, countOffResends, disconnectScript, keys, token, q.now().UnixMilli(), countOffMark.Milliseconds()); err != nil {
		return fmt.Errorf("queue: disconnect in %s: %w", screening, err)
	}
	return nil
}

const (
	// countOffResends bounds the resends of a count-off without an answer: with batchTimeout per try and
	// resendAfter doubling between them, it is given up about 25 s after it was first sent.
	countOffResends = 4
	// countOffMark is how long a count-off's or a registration's mark stays in Redis: longer than either is
	// sent again (about 25 s) or could arrive late (a pipeline past its 5 s), and short, as a crowd of
	// 100,000 leaves 100,000 marks (about 10 MB) for this long.
	countOffMark = time.Minute
)

// randomID is 96 random bits in hex: a count-off's or a registration's mark.
func randomID() string { return ids.New()[:24] }
