// `waitroom reset-demo`: refused while the demo has orders unless -force, then the demo sells from scratch,
// beside a running server on real Redis and PostgreSQL.

package app_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestResetDemoNeedsForceOnceSoldThenSellsAgain(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMISSION_INTERVAL": "100ms"})
		buy := func() int {
			t.Helper()
			c := srv.Dial(t, "demo", "")
			defer c.Close()
			m, _ := c.Until(t, "admitted", 10*time.Second)
			code, _ := srv.Reserve(t, "demo", m.Pass, "A1")
			return code
		}
		if code := buy(); code != http.StatusCreated {
			t.Fatalf("reserve A1 = %d, want 201", code)
		}
		vars := map[string]string{"WAITROOM_DATABASE_URL": env.DatabaseURL, "WAITROOM_REDIS_PREFIX": env.Prefix}
		if env.Kind == testenv.Real {
			vars["WAITROOM_REDIS_ADDR"], vars["WAITROOM_PASS_SECRET"] = env.RedisAddr, apptest.Secret // the settings the server runs with
		}
		getenv := func(k string) string { return vars[k] }
		ctx := context.Background()
		if env.Kind == testenv.Embedded {
			// The server's Redis is its own: reset-demo refuses while it answers, and runs once none does.
			vars["WAITROOM_HTTP_ADDR"] = strings.TrimPrefix(srv.URL, "http://")
			if err := app.ResetDemo(ctx, []string{"reset-demo", "-config", "", "-force"}, getenv, io.Discard); err == nil || !strings.Contains(err.Error(), "stop it first") {
				t.Errorf("reset-demo beside a running embedded server = %v, want a refusal", err)
			}
			vars["WAITROOM_HTTP_ADDR"] = freeAddr(t)
		}

		var out bytes.Buffer
		err := app.ResetDemo(ctx, []string{"reset-demo", "-config", ""}, getenv, &out)
		if err == nil || !strings.Contains(err.Error(), "-force") {
			t.Fatalf("reset-demo with a sold seat = %v, want a refusal that names -force", err)
		}
		out.Reset()
		if err := app.ResetDemo(ctx, []string{"reset-demo", "-config", "", "-force"}, getenv, &out); err != nil {
			t.Fatalf("reset-demo -force = %v", err)
		}
		if !strings.Contains(out.String(), "reset demo: 1 orders deleted (1 held or confirmed)") {
			t.Errorf("reset-demo -force said %q, want the orders it deleted", out.String())
		}
		var demo struct {
			SeatsSold int `json:"seats_sold"`
		}
		if srv.GetJSON(t, "/api/screenings/demo", &demo); demo.SeatsSold != 0 {
			t.Errorf("demo's seats sold after reset-demo = %d, want 0", demo.SeatsSold)
		}
		if env.Kind != testenv.Real {
			return // the embedded Redis is the server's own: reset-demo runs with the server stopped
		}
		if code := buy(); code != http.StatusCreated {
			t.Errorf("reserve A1 after reset-demo = %d, want 201 (for sale again)", code)
		}
	})
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
