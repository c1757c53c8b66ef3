package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// Every refusal of a request's seats, of a screening and of an admin body reaches the user as a 400 with
// its code and a message that says what is wrong, in exactly these words.
func TestRefusalsKeepTheirStatusCodeAndMessage(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	env.Demo(t, "t1", 2, 5)
	q := queue.New(env.Redis, env.Prefix)
	passes := pass.NewSecretIssuer(fuzzSecret)
	store := booking.NewStore(env.DB)
	book := booking.New(store, q, q, passes, booking.Settings{
		LockWait: 200 * time.Millisecond, LockLease: 10 * time.Second, MaxSeats: 4,
	})
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	h := hub.New(q, passes, q, reg, log)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	s := New(Deps{Queue: q, Store: store, Booking: book, Hub: h, Redis: env.Redis, Gatherer: reg, Log: log,
		AdminKey: fuzzAdminKey, AdmissionDefaults: fuzzDefaults})
	ctx := context.Background()

	parse := func(seats ...string) func() error {
		return func() error {
			_, err := book.ParseSeats(ctx, "t1", seats)
			return err
		}
	}
	create := func(body string) func() error {
		return func() error {
			rec, req := adminContext([]byte(body))
			return s.adminCreate(echo.New().NewContext(req, rec))
		}
	}
	setAdmission := func(body string) func() error {
		return func() error {
			rec, req := adminContext([]byte(body))
			req.Method = http.MethodPatch
			c := echo.New().NewContext(req, rec)
			c.SetParamNames("id")
			c.SetParamValues("t1")
			return s.adminSetAdmission(c)
		}
	}
	// screening is a create body for a well-formed screening of one row of three seats, with fields as
	// given (a JSON object's members, without braces) in place of the defaults.
	screening := func(fields string) string {
		members := map[string]string{
			"id": `"n1"`, "name": `"Night"`, "starts_at": `"2030-01-02T20:00:00Z"`,
			"sale_opens_at": `"2030-01-01T10:00:00Z"`, "rows": "1", "seats_per_row": "3",
		}
		var extra []string
		for _, f := range strings.Split(fields, ";") {
			if f == "" {
				continue
			}
			name, value, _ := strings.Cut(f, "=")
			if _, ok := members[name]; ok {
				members[name] = value
			} else {
				extra = append(extra, fmt.Sprintf("%q:%s", name, value))
			}
		}
		var out []string
		for _, name := range []string{"id", "name", "starts_at", "sale_opens_at", "rows", "seats_per_row"} {
			if v := members[name]; v != "-" {
				out = append(out, fmt.Sprintf("%q:%s", name, v))
			}
		}
		return "{" + strings.Join(append(out, extra...), ",") + "}"
	}
	manySeats := make([]string, booking.MaxSeatsPerScreening+1)
	for i := range manySeats {
		manySeats[i] = fmt.Sprintf(`"A%d"`, i+1)
	}
	storeCreate := func(seats []booking.Seat) func() error {
		return func() error {
			now := time.Now().UTC()
			return store.CreateScreening(ctx, booking.Screening{ID: "n2", Name: "Night", StartsAt: now.Add(time.Hour), SaleOpensAt: now}, seats, queue.Settings{})
		}
	}

	for _, tc := range []struct {
		name    string
		err     func() error
		status  int
		code    string
		message string
	}{
		// A request's seats.
		{"no seats", parse(), 400, "BAD_REQUEST", "bad request: no seats requested"},
		{"too many seats", parse("A1", "A2", "A3", "A4", "A5"), 400, "BAD_REQUEST", "bad request: 5 seats requested, at most 4 per reservation"},
		{"unknown seat", parse("Z9"), 400, "BAD_REQUEST", `bad request: no seat "Z9" in t1`},
		{"seat with a leading zero", parse("A01"), 400, "BAD_REQUEST", `bad request: no seat "A01" in t1`},
		{"malformed seat", parse("a1"), 400, "BAD_REQUEST", `bad request: no seat "a1" in t1`},
		{"long seat", parse(strings.Repeat("A", 40)), 400, "BAD_REQUEST", `bad request: no seat "AAAAAAAAAAAAAAAA…" in t1`},
		{"repeated seat", parse("A2", "A1", "A2"), 400, "BAD_REQUEST", "bad request: seat A2 requested twice"},

		// A screening to create.
		{"screening id", create(screening(`id="bad id!"`)), 400, "BAD_SCREENING", `screening id "bad id!": want 1–64 letters, digits, '-' or '_'`},
		{"empty name", create(screening(`name=" "`)), 400, "BAD_SCREENING", "screening name: want 1–200 bytes"},
		{"long name", create(screening(`name="` + strings.Repeat("n", 201) + `"`)), 400, "BAD_SCREENING", "screening name: want 1–200 bytes"},
		{"name with a control character", create(screening(`name="a\u0000b"`)), 400, "BAD_SCREENING", "screening name: want UTF-8 text without control characters"},
		{"no start", create(screening(`starts_at=-`)), 400, "BAD_SCREENING", "starts_at and sale_opens_at are required"},
		{"time out of range", create(screening(`sale_opens_at="1999-12-31T10:00:00Z"`)), 400, "BAD_SCREENING", "starts_at and sale_opens_at must fall in the years 2000 to 9999 (UTC)"},
		{"sale after start", create(screening(`sale_opens_at="2030-01-03T10:00:00Z"`)), 400, "BAD_SCREENING", "the sale cannot open after the screening starts"},
		{"malformed seat id", create(screening(`rows=-;seats_per_row=-;seats=["A1","A0"]`)), 400, "BAD_SCREENING", `seat id "A0": want a row of 1–3 capital letters and a number 1–9999, like A1`},
		{"long seat id", create(screening(`rows=-;seats_per_row=-;seats=["` + strings.Repeat("B", 30) + `"]`)), 400, "BAD_SCREENING", `seat id "BBBBBBBBBBBBBBBB…": want a row of 1–3 capital letters and a number 1–9999, like A1`},
		{"seat id listed twice", create(screening(`rows=-;seats_per_row=-;seats=["A1","B2","A1"]`)), 400, "BAD_SCREENING", "seat A1 listed twice"},
		{"too many listed seats", create(screening(`rows=-;seats_per_row=-;seats=[` + strings.Join(manySeats, ",") + `]`)), 400, "BAD_SCREENING", "10001 seats: at most 10000"},
		{"too many seats", storeCreate(booking.Grid(101, 100)), 400, "BAD_SCREENING", "10100 seats: want 0 (a site-wide room) to 10000"},
		{"no rows", create(screening(`rows=-;seats_per_row=-`)), 400, "BAD_SCREENING", "rows (1–702) × seats_per_row (1–9999) must make 1 to 10000 seats, or list seats"},
		{"too many rows", create(screening(`rows=703;seats_per_row=1`)), 400, "BAD_SCREENING", "rows (1–702) × seats_per_row (1–9999) must make 1 to 10000 seats, or list seats"},
		{"too many seats per row", create(screening(`rows=1;seats_per_row=10000`)), 400, "BAD_SCREENING", "rows (1–702) × seats_per_row (1–9999) must make 1 to 10000 seats, or list seats"},
		{"grid too large", create(screening(`rows=101;seats_per_row=100`)), 400, "BAD_SCREENING", "rows (1–702) × seats_per_row (1–9999) must make 1 to 10000 seats, or list seats"},
		{"listed and grid", create(screening(`seats=["A1"]`)), 400, "BAD_SCREENING", "give either seats or rows and seats_per_row, not both"},
		{"settings on create", create(screening(`admission={"batch_size":100001}`)), 400, "BAD_SCREENING", "admission batch_size 100001: want 1 to 100000"},
		{"settings on change", setAdmission(`{"interval":"50ms"}`), 400, "BAD_SCREENING", "admission interval 50ms: want 100ms to 1h"},
		{"settings on change, max_active", setAdmission(`{"max_active":1000001}`), 400, "BAD_SCREENING", "admission max_active 1000001: want 1 to 1000000"},
		{"settings on change, active_ttl", setAdmission(`{"active_ttl":"25h"}`), 400, "BAD_SCREENING", "admission active_ttl 25h0m0s: want 1s to 24h"},

		// The admission durations and counts of an admin body.
		{"interval that does not parse", setAdmission(`{"interval":"soon"}`), 400, "BAD_SCREENING", `admission interval "soon": want a positive Go duration like 1s or 5m`},
		{"negative active_ttl", create(screening(`admission={"active_ttl":"-1s"}`)), 400, "BAD_SCREENING", `admission active_ttl "-1s": want a positive Go duration like 1s or 5m`},
		{"negative count", setAdmission(`{"batch_size":-1}`), 400, "BAD_SCREENING", "batch_size and max_active must be positive"},

		// An admin body that does not decode.
		{"unknown field", create(`{"id":"n1","colour":"red"}`), 400, "BAD_REQUEST", `bad body: json: unknown field "colour"`},
		{"wrong type", create(`{"rows":"ten"}`), 400, "BAD_REQUEST", "bad body: json: cannot unmarshal string into Go struct field createBody.rows of type int"},
		{"not JSON", setAdmission(`{"interval":`), 400, "BAD_REQUEST", "bad body: unexpected EOF"},
		{"empty body", create(``), 400, "BAD_REQUEST", "bad body: EOF"},
		{"something after the object", setAdmission(`{} {}`), 400, "BAD_REQUEST", "bad body: one JSON object, nothing after it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatal("refusal = nil, want an error")
			}
			status, body := classify(err)
			if status != tc.status || body.Code != tc.code || body.Message != tc.message {
				t.Errorf("classify(%v) = %d %s %q, want %d %s %q", err, status, body.Code, body.Message, tc.status, tc.code, tc.message)
			}
		})
	}
}

// NOT_ENOUGH_SEATS says how many seats are only held, so a client knows whether waiting may help; a bare
// ErrNotEnoughSeats says nothing of them.
func TestNotEnoughSeatsSaysHowManyAreOnlyHeld(t *testing.T) {
	status, body := classify(fmt.Errorf("wrapped: %w", &booking.NotEnoughError{Count: 2, Held: 3}))
	if status != http.StatusConflict || body.Code != "NOT_ENOUGH_SEATS" || body.Held == nil || *body.Held != 3 {
		t.Errorf("classify = %d %+v, want 409 NOT_ENOUGH_SEATS with held 3", status, body)
	}
	if _, body := classify(booking.ErrNotEnoughSeats); body.Held != nil {
		t.Errorf("classify(ErrNotEnoughSeats) held = %d, want none", *body.Held)
	}
}
