package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// mainRefusal runs app.Main over env with settings and returns the error it stops with before serving; it
// fails the test if the server serves instead.
func mainRefusal(t *testing.T, env *testenv.Env, settings map[string]string) error {
	t.Helper()
	vars := map[string]string{
		"WAITROOM_HTTP_ADDR": "127.0.0.1:0", "WAITROOM_HTTP_OPS_ADDR": "127.0.0.1:0", "WAITROOM_DATABASE_URL": env.DatabaseURL,
		"WAITROOM_REDIS_PREFIX": env.Prefix, "WAITROOM_LOG_LEVEL": "warn", "WAITROOM_DEMO_ENABLED": "false",
	}
	for k, v := range settings {
		vars[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- app.Main(ctx, []string{"waitroom", "-config", ""}, func(k string) string { return vars[k] }, out)
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if strings.Contains(out.String(), "waitroom: open ") {
				cancel()
				<-done
				t.Fatalf("app.Main served; want it refused before serving. Output:\n%s", out.String())
			}
		}
	}
}

// A screening an operator switched to hold mode while the server had a checkout stops a server that has
// none from starting, the refusal naming it and the settings that would do; a closed sale and an instant
// one are let be, and with a checkout URL the same database is served.
func TestHoldScreeningsStopAServerWithoutACheckoutFromStarting(t *testing.T) {
	ctx := context.Background()
	env := testenv.New(t, testenv.Embedded)
	store := booking.NewStore(env.DB)
	for _, id := range []string{"gala", "matinee", "ended"} {
		env.Demo(t, id, 1, 2)
	}
	for _, id := range []string{"gala", "ended"} {
		if err := store.SetCheckout(ctx, id, booking.CheckoutHold); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.CloseSale(ctx, "ended", time.Now()); err != nil {
		t.Fatal(err)
	}
	const key = "confirm-key-0123456789abcdef"
	err := mainRefusal(t, env, map[string]string{"WAITROOM_BOOKING_CONFIRM_KEY": key})
	if err == nil {
		t.Fatal("app.Main = nil, want a refusal naming the hold-mode screening")
	}
	for _, want := range []string{`"gala"`, "booking.checkout_url", "booking.demo_checkout", "instant"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %s", err, want)
		}
	}
	for _, not := range []string{"matinee", "ended"} {
		if strings.Contains(err.Error(), not) {
			t.Errorf("refusal %q names %s, which does not hold orders", err, not)
		}
	}
	apptest.Start(t, env, map[string]string{"WAITROOM_BOOKING_CONFIRM_KEY": key,
		"WAITROOM_BOOKING_CHECKOUT_URL": "https://shop.example/pay?order={code}", "WAITROOM_DEMO_ENABLED": "false"})
}
