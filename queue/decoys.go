// The infinite queue's decoy places: a socket the server takes for a bot is shown a place that is in no
// line (server/bots.go). The place is remembered here for as long as the socket is held, so that the public
// status route answers its token as it answers a waiting one, on every instance (Decoy), and never lets it
// be mistaken for a real place by anything that admits (Status does not read it).

package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetDecoy remembers that token was shown the place zeroBasedRank in the screening's line, for d.
func (q *Queue) SetDecoy(ctx context.Context, screening, token string, zeroBasedRank int64, d time.Duration) error {
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
