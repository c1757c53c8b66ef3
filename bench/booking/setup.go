// Before the bursts: the two screenings, every user registered and admitted in one step, and their passes.

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// setup creates the two screenings, registers the users in ours' line, admits them all in one step and
// signs their passes. passes[i] is user i's.
func setup(ctx context.Context, o options, benchURL string, rdb *redis.Client, prefix, secret string) ([]string, error) {
	db, err := booking.Open(ctx, benchURL, "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	store := booking.NewStore(db)
	now := time.Now().UTC().Truncate(time.Second)
	for _, id := range []string{oursScreening, baselineScreening} {
		created, err := store.EnsureScreening(ctx, booking.Screening{
			ID: id, Name: "Seed-2 replay (" + id + ")", StartsAt: now.Add(2 * time.Hour), SaleOpensAt: now.Add(-time.Minute),
		}, booking.Grid(1, o.seats))
		if err != nil {
			return nil, err
		}
		if !created {
			return nil, fmt.Errorf("screening %q already existed in a fresh database", id)
		}
	}

	q := queue.New(rdb, prefix)
	for i := 0; i < o.users; i++ {
		if _, err := q.Register(ctx, oursScreening, ""); err != nil {
			return nil, err
		}
	}
	res, err := q.Admit(ctx, oursScreening, time.Now(), queue.Settings{BatchSize: o.users, MaxActive: o.users, ActiveTTL: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	if len(res.Admitted) != o.users {
		// The server's scheduler ticks once an hour here; one at the wrong moment would have taken some.
		return nil, fmt.Errorf("admitted %d of %d users (skip %q); run again", len(res.Admitted), o.users, res.Skip)
	}
	p := pass.NewSecretIssuer([]byte(secret))
	passes := make([]string, o.users)
	for i, tok := range res.Admitted {
		if passes[i], err = p.Issue(oursScreening, tok, res.ExpiresAt); err != nil {
			return nil, err
		}
	}
	return passes, nil
}
