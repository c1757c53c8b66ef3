// A screening's entry rules (its effective proof-of-work cost, whether it asks for an access code), the
// one rule of whether they ask anything of a new place (Open), and their cache (RulesCache), shared by the
// server's sockets and the gate.

package entry

import (
	"context"
	"time"

	"github.com/waitroom/waitroom/booking"
)

// RulesTTL is how long an instance keeps a screening's entry rules: an operator's change reaches every
// socket and the gate within it.
const RulesTTL = time.Second

// Rules are a screening's effective entry rules.
type Rules struct {
	PowCost       int // 0: no proof of work
	CodesRequired bool
}

// Open reports whether the rules ask nothing of a new place: no proof of work, no access code.
func (r Rules) Open() bool { return r.PowCost == 0 && !r.CodesRequired }

// EffectivePowCost is a screening's proof-of-work cost: its own, or fallback (pow.cost) when it has none.
func EffectivePowCost(own *int, fallback int) int {
	if own != nil {
		return *own
	}
	return fallback
}

// RulesOf are the effective rules of what the store keeps of a screening, under pow.cost powCost.
func RulesOf(r booking.EntryRules, powCost int) Rules {
	return Rules{PowCost: EffectivePowCost(r.PowCost, powCost), CodesRequired: r.CodesRequired}
}

// RulesReader reads what a screening asks of a socket (booking.Store).
type RulesReader interface {
	EntryRules(ctx context.Context, id string) (booking.EntryRules, error)
}

// RulesCache keeps each screening's rules for RulesTTL.
type RulesCache struct {
	c *Cache[Rules]
}

// NewRulesCache reads the rules from store, a screening without a cost of its own costing powCost, and keeps
// them on the clock now (nil: time.Now).
func NewRulesCache(store RulesReader, powCost int, now func() time.Time) *RulesCache {
	return &RulesCache{c: NewCache(RulesTTL, now, func(ctx context.Context, id string) (Rules, error) {
		r, err := store.EntryRules(ctx, id)
		if err != nil {
			return Rules{}, err
		}
		return RulesOf(r, powCost), nil
	})}
}

// Rules returns the screening's rules, kept or read now.
func (r *RulesCache) Rules(ctx context.Context, id string) (Rules, error) { return r.c.Get(ctx, id) }

// Forget drops what is kept of the screening's rules: an operator's change applies at once on this instance.
func (r *RulesCache) Forget(id string) { r.c.Forget(id) }
