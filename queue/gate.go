// The gate's direct admission: a visitor let straight into a free slot while nobody waits (AdmitDirect,
// direct.lua), the passthrough of a room that has space.

package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/direct.lua
	directLua string

	directScript = redis.NewScript(directLua)
)

// ErrNoDirect means a direct admission was refused: the visitor must wait in the line. A *DirectError
// carries the reason.
var ErrNoDirect = errors.New("no direct admission")

// DirectError says why AdmitDirect admitted nobody; errors.Is(err, ErrNoDirect) holds.
type DirectError struct {
	// Reason is one of the DirectX constants.
	Reason string
}

func (e *DirectError) Error() string { return "queue: no direct admission: " + e.Reason }

// Is makes errors.Is(err, ErrNoDirect) hold.
func (e *DirectError) Is(target error) bool { return target == ErrNoDirect }

// The reasons a direct admission is refused (direct.lua).
const (
	DirectClosed     = "closed"     // sold out or closed by the operator
	DirectPaused     = "paused"     // the operator paused admission
	DirectRebuilding = "rebuilding" // Redis lost the line and it is being rebuilt
	DirectAllHeld    = "all_held"   // every seat is held or sold
	DirectNotOpen    = "not_open"   // the sale has not opened
	DirectLine       = "line"       // somebody waits: the newcomer waits behind them
	DirectFull       = "full"       // max_active slots are taken
	DirectTaken      = "taken"      // the token already holds a slot
)

// Direct is a direct admission: the new token and its slot's expiry.
type Direct struct {
	Token     string
	ExpiresAt time.Time
	// Active counts the slots held right after it.
	Active int64
}

// AdmitDirect admits a new token straight into a slot of the screening, with s's active_ttl, when nobody
// waits and fewer than s.MaxActive hold a slot: in one script, so concurrent calls never go past max_active
// and never ahead of anyone waiting. opensAt is the sale time (the line opens then, as Enter opens it).
// A refusal is a *DirectError (errors.Is(err, ErrNoDirect)).
func (q *Queue) AdmitDirect(ctx context.Context, screening string, opensAt time.Time, s Settings) (Direct, error) {
	token := NewToken()
	if err := q.check(screening, token); err != nil {
		return Direct{}, err
	}
	if s.MaxActive <= 0 || s.ActiveTTL <= 0 {
		return Direct{}, fmt.Errorf("queue: admit directly to %s: max_active and active_ttl must be set", screening)
	}
	k := q.keys(screening)
	res, err := directScript.Run(ctx, q.rdb,
		[]string{k.waiting, k.active, k.closed, k.opened, k.pre, k.paused, k.hold, k.allHeld, k.admitAt, k.stats, k.log},
		q.now().UnixMilli(), s.MaxActive, s.ActiveTTL.Milliseconds(), token, opensAt.UnixMilli(), q.logHash(token)).Slice()
	if err != nil {
		return Direct{}, fmt.Errorf("queue: admit directly to %s: %w", screening, err)
	}
	if len(res) != 3 {
		return Direct{}, fmt.Errorf("queue: admit directly to %s: unexpected reply %v", screening, res)
	}
	reason, _ := res[0].(string)
	expiresMs, _ := res[1].(int64)
	active, _ := res[2].(int64)
	if reason != "admitted" {
		return Direct{Active: active}, fmt.Errorf("queue: admit directly to %s: %w", screening, &DirectError{Reason: reason})
	}
	return Direct{Token: token, ExpiresAt: time.UnixMilli(expiresMs), Active: active}, nil
}
