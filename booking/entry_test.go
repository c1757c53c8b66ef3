// Tests of a screening's own proof-of-work cost: validated, stored, read back, dropped.

package booking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestAPowCostIsValidatedStoredAndDropped(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		store := booking.NewStore(env.DB)
		now := time.Now().UTC().Truncate(time.Second)
		sc := booking.Screening{ID: "pow", Name: "Pow", StartsAt: now.Add(time.Hour), SaleOpensAt: now}
		if err := store.CreateScreening(ctx, sc, nil, queue.Settings{}); err != nil {
			t.Fatal(err)
		}
		rules, err := store.EntryRules(ctx, "pow")
		if err != nil || rules.PowCost != nil {
			t.Fatalf("EntryRules of a new screening = %+v, %v; want no cost of its own", rules, err)
		}
		for _, bad := range []int{-1, booking.MaxPowCost + 1} {
			if err := store.SetPowCost(ctx, "pow", &bad); !errors.As(err, new(*booking.InvalidError)) {
				t.Errorf("SetPowCost(%d) = %v, want an InvalidError", bad, err)
			}
		}
		for _, cost := range []int{0, 5000} {
			if err := store.SetPowCost(ctx, "pow", &cost); err != nil {
				t.Fatal(err)
			}
			rules, err := store.EntryRules(ctx, "pow")
			if err != nil || rules.PowCost == nil || *rules.PowCost != cost {
				t.Fatalf("after SetPowCost(%d): EntryRules = %+v, %v", cost, rules, err)
			}
			sum, err := store.Screening(ctx, "pow")
			if err != nil || sum.PowCost == nil || *sum.PowCost != cost {
				t.Fatalf("after SetPowCost(%d): Screening.PowCost = %v, %v", cost, sum.PowCost, err)
			}
		}
		if err := store.SetPowCost(ctx, "pow", nil); err != nil {
			t.Fatal(err)
		}
		if rules, err := store.EntryRules(ctx, "pow"); err != nil || rules.PowCost != nil {
			t.Errorf("after dropping the cost: EntryRules = %+v, %v; want none of its own", rules, err)
		}
		one := 1
		if err := store.SetPowCost(ctx, "nope", &one); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("SetPowCost of an unknown screening = %v, want ErrUnknownScreening", err)
		}
		if _, err := store.EntryRules(ctx, "nope"); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("EntryRules of an unknown screening = %v, want ErrUnknownScreening", err)
		}
	})
}
