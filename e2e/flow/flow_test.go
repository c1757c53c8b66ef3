// One client's whole flow: register, reconnect, be admitted and reserve; a sell-out told to the line;
// refusals of an unknown screening and a bad token.

package flow

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRegisterReconnectAdmitReserve walks the whole path a client of docs/protocol.md takes: register, keep
// the place on reconnect, see the line move, be admitted with a pass, reserve, and be refused a taken seat,
// a forged pass and a spent one.
func TestRegisterReconnectAdmitReserve(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "other", 1, 2)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMISSION_INTERVAL":   "300ms",
			"WAITROOM_ADMISSION_BATCH_SIZE": "1",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		})

		a := srv.Dial(t, "demo", "")
		qa := a.Next(t, 5*time.Second)
		if qa.Type != "queued" || !qa.Inserted || len(qa.Token) != 32 {
			t.Fatalf("first message = %+v, want queued, inserted, with a token", qa)
		}
		// A refresh: the same token keeps its place and is not inserted again.
		a.Close()
		a = srv.Dial(t, "demo", qa.Token)
		again := a.Next(t, 5*time.Second)
		if again.Type == "queued" && (again.Inserted || again.Token != qa.Token) {
			t.Fatalf("reconnect = %+v, want the same token, not inserted", again)
		}

		b := srv.Dial(t, "demo", "")
		qb := b.Next(t, 5*time.Second)
		if qb.Type != "queued" || qb.Token == qa.Token {
			t.Fatalf("second client = %+v, want queued with a new token", qb)
		}

		// max_active 1: A is admitted first (it came first), B waits until A's slot is freed.
		var admA testenv.Message
		if again.Type == "admitted" {
			admA = again
		} else {
			admA, _ = a.Until(t, "admitted", 10*time.Second)
		}
		if admA.Pass == "" || admA.Token != qa.Token {
			t.Fatalf("admitted = %+v, want a pass for A's token", admA)
		}
		if _, err := time.Parse(time.RFC3339, admA.ExpiresAt); err != nil {
			t.Fatalf("expires_at %q: %v", admA.ExpiresAt, err)
		}

		// A reconnect while admitted hands the pass out again.
		a2 := srv.Dial(t, "demo", qa.Token)
		if m := a2.Next(t, 5*time.Second); m.Type != "admitted" || m.Pass == "" {
			t.Fatalf("reconnect while admitted = %+v, want admitted with a pass", m)
		}

		var st map[string]any
		srv.GetJSON(t, "/api/screenings/demo/queue/"+qb.Token, &st)
		if st["status"] != "waiting" || st["rank"] != float64(1) {
			t.Fatalf("B's status = %v, want waiting at rank 1", st)
		}

		if code, body := srv.Reserve(t, "demo", admA.Pass+"x", "A1"); code != http.StatusUnauthorized || apptest.ErrorCode(body) != "INVALID_PASS" {
			t.Fatalf("forged pass: %d %v, want 401 INVALID_PASS", code, body)
		}
		if code, body := srv.Reserve(t, "other", admA.Pass, "A1"); code != http.StatusUnauthorized || apptest.ErrorCode(body) != "INVALID_PASS" {
			t.Fatalf("pass of another screening: %d %v, want 401 INVALID_PASS", code, body)
		}
		if code, body := srv.Reserve(t, "nope", admA.Pass, "A1"); code != http.StatusNotFound || apptest.ErrorCode(body) != "UNKNOWN_SCREENING" {
			t.Fatalf("unknown screening: %d %v, want 404 UNKNOWN_SCREENING", code, body)
		}
		if code, body := srv.Reserve(t, "demo", admA.Pass, "Z99"); code != http.StatusBadRequest || apptest.ErrorCode(body) != "BAD_REQUEST" {
			t.Fatalf("unknown seat: %d %v, want 400 BAD_REQUEST", code, body)
		}
		code, body := srv.Reserve(t, "demo", admA.Pass, "A2", "A1")
		if code != http.StatusCreated {
			t.Fatalf("reserve: %d %v, want 201", code, body)
		}
		if seats := fmt.Sprint(body["seats"]); seats != "[A1 A2]" {
			t.Errorf("reserved seats = %s, want [A1 A2] (sorted)", seats)
		}
		if code, body := srv.Reserve(t, "demo", admA.Pass, "B1"); code != http.StatusGone || apptest.ErrorCode(body) != "PASS_SPENT" {
			t.Fatalf("second use of a pass: %d %v, want 410 PASS_SPENT", code, body)
		}

		// A's reservation freed its slot, and the slot is refilled at once: B is admitted, and A1 is taken.
		admB, _ := b.Until(t, "admitted", 10*time.Second)
		if code, body := srv.Reserve(t, "demo", admB.Pass, "A1"); code != http.StatusConflict || apptest.ErrorCode(body) != "SEAT_TAKEN" {
			t.Fatalf("taken seat: %d %v, want 409 SEAT_TAKEN", code, body)
		}
		if code, body := srv.Reserve(t, "demo", admB.Pass, "C3"); code != http.StatusCreated {
			t.Fatalf("B reserves a free seat: %d %v, want 201", code, body)
		}

		var seats []map[string]any
		srv.GetJSON(t, "/api/screenings/demo/seats", &seats)
		sold := 0
		for _, s := range seats {
			if s["status"] == "sold" {
				sold++
			}
		}
		if len(seats) != 100 || sold != 3 {
			t.Errorf("seat map: %d seats, %d sold; want 100 seats, 3 sold", len(seats), sold)
		}
	})
}

// TestSoldOutTellsTheLine fills a screening and checks that the waiting line is told at once and that a new
// registration is answered sold_out.
func TestSoldOutTellsTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "tiny", 1, 1)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMISSION_INTERVAL":   "300ms",
			"WAITROOM_ADMISSION_BATCH_SIZE": "1",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
			"WAITROOM_DEMO_ENABLED":         "false",
		})
		a := srv.Dial(t, "tiny", "")
		a.Next(t, 5*time.Second)
		b := srv.Dial(t, "tiny", "")
		b.Next(t, 5*time.Second)
		adm, _ := a.Until(t, "admitted", 10*time.Second)
		if code, body := srv.Reserve(t, "tiny", adm.Pass, "A1"); code != http.StatusCreated {
			t.Fatalf("reserve the last seat: %d %v", code, body)
		}
		if m, _ := b.Until(t, "sold_out", 10*time.Second); m.Type != "sold_out" {
			t.Fatalf("waiting client got %+v, want sold_out", m)
		}
		c := srv.Dial(t, "tiny", "")
		if m := c.Next(t, 5*time.Second); m.Type != "sold_out" {
			t.Fatalf("new registration got %+v, want sold_out", m)
		}
		var list []map[string]any
		srv.GetJSON(t, "/api/screenings", &list)
		if len(list) != 1 || list[0]["state"] != "sold_out" {
			t.Errorf("screenings = %v, want tiny sold_out", list)
		}
	})
}

// TestUnknownScreeningAndBadToken: a socket to a screening that does not exist, or with a token the server
// never handed out, gets an error message and a close.
func TestUnknownScreeningAndBadToken(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, nil)
		if m := srv.Dial(t, "nope", "").Next(t, 5*time.Second); m.Type != "error" || m.Code != "UNKNOWN_SCREENING" {
			t.Errorf("unknown screening: %+v, want error UNKNOWN_SCREENING", m)
		}
		if m := srv.Dial(t, "demo", "not-a-token").Next(t, 5*time.Second); m.Type != "error" || m.Code != "BAD_TOKEN" {
			t.Errorf("bad token: %+v, want error BAD_TOKEN", m)
		}
		var body map[string]any
		if code := srv.GetJSON(t, "/api/screenings/nope", &body); code != http.StatusNotFound || apptest.ErrorCode(body) != "UNKNOWN_SCREENING" {
			t.Errorf("GET unknown screening: %d %v", code, body)
		}
	})
}
