// Tests of what the gate keeps of a screening: a site-wide room without seats that never sells out, and a
// room's own gate mode, validated and read back.

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

func TestASiteWideRoomWithoutSeatsIsOnSaleNeverSoldOut(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		store := booking.NewStore(env.DB)
		now := time.Now().UTC().Truncate(time.Second)
		sc := booking.Screening{ID: "shop", Name: "The shop", StartsAt: now.Add(time.Hour), SaleOpensAt: now.Add(-time.Minute)}
		if err := store.CreateScreening(ctx, sc, nil, queue.Settings{MaxActive: 3}); err != nil {
			t.Fatalf("CreateScreening without seats: %v", err)
		}
		sales, err := store.Sales(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(sales) != 1 || sales[0].ID != "shop" || sales[0].Ended {
			t.Fatalf("Sales = %+v, want shop on sale, not ended", sales)
		}
		room, err := store.GateRoom(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		if room.Admission.MaxActive != 3 || room.GateMode != "" || !room.SaleOpensAt.Equal(sc.SaleOpensAt) {
			t.Errorf("GateRoom = %+v, want max_active 3, no mode of its own, the sale time", room)
		}
	})
}

func TestAGateModeIsValidatedStoredAndReadBack(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		for _, mode := range []string{booking.GateQueueAll, booking.GatePassthrough, booking.GateAuto} {
			if err := store.SetGateMode(ctx, "s1", mode); err != nil {
				t.Fatalf("SetGateMode(%q): %v", mode, err)
			}
			room, err := store.GateRoom(ctx, "s1")
			if err != nil || room.GateMode != mode {
				t.Errorf("GateRoom after SetGateMode(%q) = %+v, %v", mode, room, err)
			}
			sum, err := store.Screening(ctx, "s1")
			if err != nil || sum.GateMode != mode {
				t.Errorf("Screening after SetGateMode(%q) = gate mode %q, %v", mode, sum.GateMode, err)
			}
		}
		var invalid *booking.InvalidError
		if err := store.SetGateMode(ctx, "s1", "open"); !errors.As(err, &invalid) || !errors.Is(err, booking.ErrBadScreening) {
			t.Errorf("SetGateMode(open) = %v, want a refusal", err)
		}
		if err := store.SetGateMode(ctx, "nope", booking.GateAuto); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("SetGateMode of an unknown room = %v, want ErrUnknownScreening", err)
		}
		if _, err := store.GateRoom(ctx, "nope"); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("GateRoom(nope) = %v, want ErrUnknownScreening", err)
		}
	})
}
