// The infinite queue's decoy places: a socket the entry takes for a bot (entry/bots.go), or a JSON client
// at the gate over its pace (gate/waiting.go), is shown a place that is in no line (NewDecoy). The place is
// remembered here for as long as it is held, so that the public status route answers its token as it
// answers a waiting one, on every instance (Decoy), and never lets it be mistaken for a real place by
// anything that admits (Status does not read it).

package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewDecoy draws a decoy place in the screening's line: a fresh token behind everyone waiting now,
// registered nowhere, remembered for d. The entry is good to show even with an error, which says only that
// the place could not be remembered (its token then reads as unknown).
func (q *Queue) NewDecoy(ctx context.Context, screening string, d time.Duration) (Entry, error) {
	waiting, _, err := q.Counts(ctx, screening)
	if err != nil {
		waiting = 0 // shown at the head, it still holds up nobody
	}
	e := Entry{Token: NewToken(), State: Waiting, ZeroBasedRank: waiting, Total: waiting + 1, Inserted: true}
	return e, q.setDecoy(ctx, screening, e.Token, waiting, d)
}

// setDecoy remembers that token was shown the place zeroBasedRank in the screening's line, for d.
func (q *Queue) setDecoy(ctx context.Context, screening, token string, zeroBasedRank int64, d time.Duration) error {
	if err := q.check(screening, token); err != nil {
		return err
	}
	if err := q.rdb.Set(ctx, q.decoyKey(screening, token), zeroBasedRank, max(d, time.Second)).Err(); err != nil {
		return fmt.Errorf("queue: set a decoy place in %s: %w", screening, err)
	}
	return nil
}

// Decoy reports the place token was shown as a decoy (SetDecoy), if it still is one.
func (q *Queue) Decoy(ctx context.Context, screening, token string) (zeroBasedRank int64, ok bool, err error) {
	if err := q.check(screening, token); err != nil {
		return 0, false, err
	}
	v, err := q.rdb.Get(ctx, q.decoyKey(screening, token)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("queue: read a decoy place in %s: %w", screening, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("queue: decoy place in %s: %w", screening, err)
	}
	return n, true, nil
}

func (q *Queue) decoyKey(screening, token string) string {
	return Key(q.prefix, screening, "decoy:"+token)
}
