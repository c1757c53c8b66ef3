// The admin API through the whole server: its key, creating screenings, changing admission live, pausing,
// resuming and closing a sale, the instances list and the live stream.

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

const adminKey = "admin-key-0123456789abcdef"

// adminDefaults are the server's admission settings a screening leaves unset.
var adminDefaults = queue.Settings{Interval: time.Second, BatchSize: 10, MaxActive: 100, ActiveTTL: 2 * time.Minute}

// newAdminApp is newApp with the admin API on.
func newAdminApp(t *testing.T, env *testenv.Env) *testServer {
	t.Helper()
	return newApp(t, env, func(c *config.Config) {
		c.Admin.Key = adminKey
		c.Admission.Interval, c.Admission.BatchSize = adminDefaults.Interval, adminDefaults.BatchSize
		c.Admission.MaxActive, c.Admission.ActiveTTL = adminDefaults.MaxActive, adminDefaults.ActiveTTL
	})
}

// adminSettings is a screening's admission settings on the wire.
type adminSettings struct {
	Interval  string `json:"interval"`
	BatchSize int    `json:"batch_size"`
	MaxActive int    `json:"max_active"`
	ActiveTTL string `json:"active_ttl"`
}

// defaultSettings is adminDefaults on the wire.
var defaultSettings = adminSettings{Interval: "1s", BatchSize: 10, MaxActive: 100, ActiveTTL: "2m0s"}

// adminScreening is a screening as the admin API shows it.
type adminScreening struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	StartsAt       time.Time      `json:"starts_at"`
	SaleOpensAt    time.Time      `json:"sale_opens_at"`
	SeatsTotal     int            `json:"seats_total"`
	SeatsAvailable int            `json:"seats_available"`
	State          string         `json:"state"`
	Admission      adminSettings  `json:"admission"`
	ClosedAt       *time.Time     `json:"closed_at"`
	SeatsSold      int            `json:"seats_sold"`
	Line           *queue.Figures `json:"line"`
}

// adminCall sends a request with the admin key.
func (a *testServer) adminCall(t *testing.T, method, path, body string) response {
	t.Helper()
	r, err := a.do(method, path, "Bearer "+adminKey, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// adminScreeningOf decodes a screening from a response with the given status.
func adminScreeningOf(t *testing.T, what string, r response, status int) adminScreening {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s = %d %s, want %d", what, r.status, r, status)
	}
	var s adminScreening
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("%s body %s: %v", what, r, err)
	}
	return s
}

// createBody is a valid POST /api/admin/screenings body for id: 3 rows of 4 seats, on sale since a minute
// ago, starting in two hours; edit changes its fields (nil deletes one) before it is encoded.
func createBody(t *testing.T, id string, edit map[string]any) string {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	body := map[string]any{
		"id": id, "name": "Gala " + id, "starts_at": now.Add(2 * time.Hour), "sale_opens_at": now.Add(-time.Minute),
		"rows": 3, "seats_per_row": 4,
	}
	for k, v := range edit {
		if v == nil {
			delete(body, k)
		} else {
			body[k] = v
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// seatIDs reads the public seat map of a screening.
func seatIDs(t *testing.T, a *testServer, screening string) []string {
	t.Helper()
	var seats []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	decode(t, "GET seats of "+screening, a.get(t, "/api/screenings/"+screening+"/seats"), &seats)
	ids := make([]string, len(seats))
	for i, s := range seats {
		ids[i] = s.ID
		if s.Status != "available" {
			t.Errorf("seat %s of new screening %s = %s, want available", s.ID, screening, s.Status)
		}
	}
	return ids
}

// publicIDs lists the ids of GET /api/screenings.
func publicIDs(t *testing.T, a *testServer) []string {
	t.Helper()
	var list []struct {
		ID string `json:"id"`
	}
	decode(t, "GET /api/screenings", a.get(t, "/api/screenings"), &list)
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	return ids
}

// openSocket dials a screening's waiting room and reads its first message.
func openSocket(t *testing.T, a *testServer, screening string) (*testenv.Socket, testenv.Message) {
	t.Helper()
	conn, res, err := a.dial(t, "/ws/screenings/"+screening, "")
	if err != nil {
		t.Fatalf("socket to %s = %v (%v), want it open", screening, status(res), err)
	}
	return conn, conn.Next(t, readWait)
}

// waitFollowed waits until some instance listens to the screening's events (sharded or classic pub/sub).
// The hub subscribes on a goroutine after a socket joins, and a pause or resume published before that is
// never passed on to the socket (hub.resync reads the paused flag for the wait estimates but sends no
// paused/resumed message), so a test that wants the message waits for the subscription first.
func waitFollowed(t *testing.T, a *testServer, screening string) {
	t.Helper()
	ctx := context.Background()
	channel := queue.Key(a.env.Prefix, screening, "events")
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n := int64(0)
		if m, err := a.env.Redis.PubSubShardNumSub(ctx, channel).Result(); err == nil {
			n += m[channel]
		}
		if m, err := a.env.Redis.PubSubNumSub(ctx, channel).Result(); err == nil {
			n += m[channel]
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("nobody subscribed to %s within 5s", channel)
}

func TestAdminAPIIsOffWithoutAKey(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		for _, c := range []struct{ method, path, auth string }{
			{http.MethodGet, "/api/admin/screenings", ""},
			{http.MethodGet, "/api/admin/screenings", "Bearer "},
			{http.MethodGet, "/api/admin/screenings", "Bearer anything"},
			{http.MethodPost, "/api/admin/screenings", "Bearer "},
			{http.MethodPost, "/api/admin/screenings/s1/pause", "Bearer "},
			{http.MethodGet, "/api/admin/instances", "Bearer "},
		} {
			body := ""
			if c.method == http.MethodPost {
				body = createBody(t, "off", nil)
			}
			r, err := a.do(c.method, c.path, c.auth, body)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, fmt.Sprintf("%s %s (Authorization %q) without an admin key", c.method, c.path, c.auth), r, http.StatusNotFound, "NOT_FOUND")
		}
		if ids := publicIDs(t, a); !slices.Equal(ids, []string{"s1"}) {
			t.Errorf("screenings after the refused calls = %v, want [s1]", ids)
		}
		if f, err := a.q.Figures(context.Background(), "s1"); err != nil || f.Paused {
			t.Errorf("s1 paused = %v (%v), want false", f.Paused, err)
		}
	})
}

func TestAdminNeedsTheBearerKey(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		// Each refused call comes from an address of its own (X-Forwarded-For, from a trusted loopback peer),
		// so that the guard on wrong keys (adminguard_test.go) never answers in the key's place here.
		a := newApp(t, env, func(c *config.Config) {
			c.Admin.Key = adminKey
			c.HTTP.BehindProxy, c.HTTP.TrustedProxies = true, []string{"127.0.0.1"}
		})
		caller := 0
		for _, auth := range []string{
			"",
			"Bearer ",
			"Bearer wrong",
			"Bearer " + adminKey + "x",
			"Bearer " + adminKey[:len(adminKey)-1],
			"Bearer" + adminKey,
			adminKey,
			"Basic " + adminKey,
		} {
			for _, c := range []struct{ method, path, body string }{
				{http.MethodGet, "/api/admin/screenings", ""},
				{http.MethodPost, "/api/admin/screenings", createBody(t, "sneaky", nil)},
				{http.MethodPost, "/api/admin/screenings/s1/pause", ""},
				{http.MethodGet, "/api/admin/stream", ""},
			} {
				req, err := http.NewRequest(c.method, a.ts.URL+c.path, strings.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				caller++
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", caller))
				res, err := a.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s %s with Authorization %q", c.method, c.path, auth)
				wantError(t, what, response{status: res.StatusCode, body: b}, http.StatusUnauthorized, "UNAUTHORIZED")
				if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
					t.Errorf("%s: WWW-Authenticate = %q, want a Bearer challenge", what, got)
				}
			}
		}
		if ids := publicIDs(t, a); !slices.Equal(ids, []string{"s1"}) {
			t.Errorf("screenings after the refused calls = %v, want [s1]", ids)
		}
		if f, err := a.q.Figures(context.Background(), "s1"); err != nil || f.Paused {
			t.Errorf("s1 paused after refused calls = %v (%v), want false", f.Paused, err)
		}
		if r := a.adminCall(t, http.MethodGet, "/api/admin/screenings", ""); r.status != http.StatusOK {
			t.Errorf("GET /api/admin/screenings with the key = %d %s, want 200", r.status, r)
		}
	})
}

func TestAdminCreatesAScreeningOfRowsAndSeats(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		created := adminScreeningOf(t, "POST gala", a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "gala", nil)), http.StatusCreated)
		if created.ID != "gala" || created.Name != "Gala gala" || created.SeatsTotal != 12 || created.SeatsAvailable != 12 || created.State != "on_sale" ||
			created.Admission != defaultSettings || created.ClosedAt != nil || created.Line == nil {
			t.Errorf("created = %+v, want gala on_sale, 12 of 12 seats, the default settings %+v, a line, not closed", created, defaultSettings)
		}

		want := []string{"A1", "A2", "A3", "A4", "B1", "B2", "B3", "B4", "C1", "C2", "C3", "C4"}
		if got := seatIDs(t, a, "gala"); !slices.Equal(got, want) {
			t.Errorf("seats of gala = %v, want %v", got, want)
		}
		got := adminScreeningOf(t, "GET gala", a.adminCall(t, http.MethodGet, "/api/admin/screenings/gala", ""), http.StatusOK)
		if got.ID != "gala" || got.SeatsTotal != 12 || got.Admission != defaultSettings {
			t.Errorf("GET /api/admin/screenings/gala = %+v, want what was created", got)
		}
		var list []adminScreening
		decode(t, "GET /api/admin/screenings", a.adminCall(t, http.MethodGet, "/api/admin/screenings", ""), &list)
		var ids []string
		for _, s := range list {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"gala", "s1"}) {
			t.Errorf("GET /api/admin/screenings = %v, want gala and s1", ids)
		}

		// It is live at once, with no restart: its waiting room queues.
		if _, m := openSocket(t, a, "gala"); m.Type != "queued" || m.Rank != 1 {
			t.Errorf("first message of a socket to gala = %+v, want queued at rank 1", m)
		}
	})
}

func TestAdminCreatesAScreeningOfListedSeats(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		seats := []string{"A1", "A2", "B7", "AA10"}
		body := createBody(t, "premiere", map[string]any{
			"rows": nil, "seats_per_row": nil, "seats": seats,
			"sale_opens_at": time.Now().UTC().Add(time.Hour).Truncate(time.Second),
			"admission":     map[string]any{"interval": "500ms", "batch_size": 5},
		})
		created := adminScreeningOf(t, "POST premiere", a.adminCall(t, http.MethodPost, "/api/admin/screenings", body), http.StatusCreated)
		wantSettings := adminSettings{Interval: "500ms", BatchSize: 5, MaxActive: defaultSettings.MaxActive, ActiveTTL: defaultSettings.ActiveTTL}
		if created.SeatsTotal != 4 || created.State != "upcoming" || created.Admission != wantSettings {
			t.Errorf("created = %+v, want 4 seats, upcoming, settings %+v (unset fields: the defaults)", created, wantSettings)
		}
		got := seatIDs(t, a, "premiere")
		slices.Sort(got)
		slices.Sort(seats)
		if !slices.Equal(got, seats) {
			t.Errorf("seats of premiere = %v, want %v", got, seats)
		}

		// Before its sale, its waiting room is the pre-queue.
		if _, m := openSocket(t, a, "premiere"); m.Type != "prequeue" || !queue.ValidToken(m.Token) {
			t.Errorf("first message of a socket to premiere before its sale = %+v, want prequeue with a token", m)
		}
	})
}

func TestAdminCreateOfAnExistingIDIsConflict(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		adminScreeningOf(t, "POST gala", a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "gala", nil)), http.StatusCreated)

		again := createBody(t, "gala", map[string]any{"name": "Impostor", "rows": 1, "seats_per_row": 1})
		wantError(t, "POST gala again", a.adminCall(t, http.MethodPost, "/api/admin/screenings", again), http.StatusConflict, "SCREENING_EXISTS")
		wantError(t, "POST s1 (the demo's)", a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "s1", nil)), http.StatusConflict, "SCREENING_EXISTS")

		if got := adminScreeningOf(t, "GET gala", a.adminCall(t, http.MethodGet, "/api/admin/screenings/gala", ""), http.StatusOK); got.Name != "Gala gala" || got.SeatsTotal != 12 {
			t.Errorf("gala after a second create = %q with %d seats, want the first: %q with 12", got.Name, got.SeatsTotal, "Gala gala")
		}
		if got := seatIDs(t, a, "s1"); len(got) != 10 {
			t.Errorf("seats of s1 after a create over it = %d, want 10", len(got))
		}
	})
}

func TestAdminRefusesABadScreening(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		now := time.Now().UTC().Truncate(time.Second)
		for _, c := range []struct {
			name, id, body, code string
		}{
			{"unknown field", "b1", createBody(t, "b1", map[string]any{"colour": "red"}), "BAD_REQUEST"},
			{"seats and rows", "b2", createBody(t, "b2", map[string]any{"seats": []string{"A1"}}), "BAD_SCREENING"},
			{"zero rows", "b3", createBody(t, "b3", map[string]any{"rows": 0}), "BAD_SCREENING"},
			{"no seats at all", "b4", createBody(t, "b4", map[string]any{"rows": nil, "seats_per_row": nil}), "BAD_SCREENING"},
			{"more than 10,000 seats", "b5", createBody(t, "b5", map[string]any{"rows": 101, "seats_per_row": 100}), "BAD_SCREENING"},
			{"lowercase seat id", "b6", createBody(t, "b6", map[string]any{"rows": nil, "seats_per_row": nil, "seats": []string{"A1", "a1"}}), "BAD_SCREENING"},
			{"seat listed twice", "b7", createBody(t, "b7", map[string]any{"rows": nil, "seats_per_row": nil, "seats": []string{"A1", "B2", "A1"}}), "BAD_SCREENING"},
			{"sale after the start", "b8", createBody(t, "b8", map[string]any{"sale_opens_at": now.Add(3 * time.Hour)}), "BAD_SCREENING"},
			{"no start", "b9", createBody(t, "b9", map[string]any{"starts_at": nil}), "BAD_SCREENING"},
			{"empty name", "b10", createBody(t, "b10", map[string]any{"name": " "}), "BAD_SCREENING"},
			{"id with a space", "b 11", createBody(t, "b 11", nil), "BAD_SCREENING"},
			{"duration that is no duration", "b12", createBody(t, "b12", map[string]any{"admission": map[string]any{"interval": "fast"}}), "BAD_SCREENING"},
			{"zero duration", "b13", createBody(t, "b13", map[string]any{"admission": map[string]any{"active_ttl": "0s"}}), "BAD_SCREENING"},
			{"interval below 100ms", "b14", createBody(t, "b14", map[string]any{"admission": map[string]any{"interval": "10ms"}}), "BAD_SCREENING"},
			{"negative batch", "b15", createBody(t, "b15", map[string]any{"admission": map[string]any{"batch_size": -1}}), "BAD_SCREENING"},
			{"rows as a string", "b16", createBody(t, "b16", map[string]any{"rows": "3"}), "BAD_REQUEST"},
			{"trailing data", "b17", createBody(t, "b17", nil) + ` {"id":"b17b"}`, "BAD_REQUEST"},
			{"trailing brace", "b18", createBody(t, "b18", nil) + `}`, "BAD_REQUEST"},
			{"malformed JSON", "b19", `{"id":"b19","rows":3,`, "BAD_REQUEST"},
			{"not an object", "b20", `["b20"]`, "BAD_REQUEST"},
			{"empty body", "b21", ``, "BAD_REQUEST"},
		} {
			r := a.adminCall(t, http.MethodPost, "/api/admin/screenings", c.body)
			wantError(t, "POST "+c.name, r, http.StatusBadRequest, c.code)
			if c.id != "b 11" {
				wantError(t, "GET "+c.id+" after "+c.name, a.adminCall(t, http.MethodGet, "/api/admin/screenings/"+c.id, ""), http.StatusNotFound, "UNKNOWN_SCREENING")
			}
		}
		if ids := publicIDs(t, a); !slices.Equal(ids, []string{"s1"}) {
			t.Errorf("screenings after the refused creates = %v, want only [s1]", ids)
		}
	})
}

func TestAdminChangesOnlyTheAdmissionSettingsGiven(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newAdminApp(t, env)
		body := createBody(t, "gala", map[string]any{"admission": map[string]any{"interval": "2s", "batch_size": 5}})
		adminScreeningOf(t, "POST gala", a.adminCall(t, http.MethodPost, "/api/admin/screenings", body), http.StatusCreated)

		patch := func(body string, want adminSettings) {
			t.Helper()
			var got adminSettings
			decode(t, "PATCH "+body, a.adminCall(t, http.MethodPatch, "/api/admin/screenings/gala/admission", body), &got)
			if got != want {
				t.Errorf("PATCH %s = %+v, want %+v", body, got, want)
			}
			if s := adminScreeningOf(t, "GET gala", a.adminCall(t, http.MethodGet, "/api/admin/screenings/gala", ""), http.StatusOK); s.Admission != want {
				t.Errorf("GET gala after PATCH %s: admission %+v, want %+v", body, s.Admission, want)
			}
		}
		patch(`{"max_active":7}`, adminSettings{Interval: "2s", BatchSize: 5, MaxActive: 7, ActiveTTL: "2m0s"})
		patch(`{"interval":"1.5s","active_ttl":"30s"}`, adminSettings{Interval: "1.5s", BatchSize: 5, MaxActive: 7, ActiveTTL: "30s"})
		patch(`{}`, adminSettings{Interval: "1.5s", BatchSize: 5, MaxActive: 7, ActiveTTL: "30s"})

		// The scheduler of every instance reads them from the store at its next refresh.
		sales, err := a.store.Sales(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(sales, func(s queue.Sale) bool { return s.ID == "gala" })
		if want := (queue.Settings{Interval: 1500 * time.Millisecond, BatchSize: 5, MaxActive: 7, ActiveTTL: 30 * time.Second}); i < 0 || sales[i].Settings != want {
			t.Errorf("Store.Sales = %+v, want gala with %+v", sales, want)
		}

		for _, c := range []struct{ body, code string }{
			{`{"interval":"fast"}`, "BAD_SCREENING"},
			{`{"batch_size":-1}`, "BAD_SCREENING"},
			{`{"active_ttl":"25h"}`, "BAD_SCREENING"},
			{`{"batch":3}`, "BAD_REQUEST"},
			{`{"max_active":3}{}`, "BAD_REQUEST"},
			{`{"max_active":`, "BAD_REQUEST"},
		} {
			wantError(t, "PATCH "+c.body, a.adminCall(t, http.MethodPatch, "/api/admin/screenings/gala/admission", c.body), http.StatusBadRequest, c.code)
		}
		if s := adminScreeningOf(t, "GET gala", a.adminCall(t, http.MethodGet, "/api/admin/screenings/gala", ""), http.StatusOK); s.Admission.MaxActive != 7 || s.Admission.Interval != "1.5s" {
			t.Errorf("admission after refused PATCHes = %+v, want it unchanged", s.Admission)
		}
		wantError(t, "PATCH of an unknown screening", a.adminCall(t, http.MethodPatch, "/api/admin/screenings/nope/admission", `{"batch_size":3}`), http.StatusNotFound, "UNKNOWN_SCREENING")
		wantError(t, "GET of an unknown screening", a.adminCall(t, http.MethodGet, "/api/admin/screenings/nope", ""), http.StatusNotFound, "UNKNOWN_SCREENING")
	})
}

func TestAdminPausesResumesAndClosesASale(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newAdminApp(t, env)
		adminScreeningOf(t, "POST gala", a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "gala", nil)), http.StatusCreated)
		conn, first := openSocket(t, a, "gala")
		if first.Type != "queued" {
			t.Fatalf("first message = %+v, want queued", first)
		}
		waitFollowed(t, a, "gala")

		paused := adminScreeningOf(t, "POST pause", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/pause", ""), http.StatusOK)
		if paused.State != "paused" || paused.Line == nil || !paused.Line.Paused || paused.Line.Waiting != 1 {
			t.Errorf("after pause = state %q, line %+v; want paused, line paused with 1 waiting", paused.State, paused.Line)
		}
		if m := conn.Next(t, readWait); m.Type != "paused" {
			t.Errorf("message to the waiting socket after pause = %+v, want paused", m)
		}
		if res, err := a.q.Admit(ctx, "gala", time.Now(), adminDefaults); err != nil || res.Skip != queue.Paused {
			t.Errorf("tick while paused = skip %q, %v; want %q", res.Skip, err, queue.Paused)
		}

		resumed := adminScreeningOf(t, "POST resume", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/resume", ""), http.StatusOK)
		if resumed.State != "on_sale" || resumed.Line == nil || resumed.Line.Paused {
			t.Errorf("after resume = state %q, line %+v; want on_sale, not paused", resumed.State, resumed.Line)
		}
		if m := conn.Next(t, readWait); m.Type != "resumed" {
			t.Errorf("message to the waiting socket after resume = %+v, want resumed", m)
		}

		closed := adminScreeningOf(t, "POST close", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/close", ""), http.StatusOK)
		if closed.State != "closed" || closed.ClosedAt == nil || closed.Line == nil || !closed.Line.Closed || closed.Line.Waiting != 0 {
			t.Errorf("after close = state %q, closed_at %v, line %+v; want closed, a time, line closed with nobody waiting", closed.State, closed.ClosedAt, closed.Line)
		}
		if m := conn.Next(t, readWait); m.Type != "sold_out" {
			t.Errorf("message to the waiting socket after close = %+v, want sold_out", m)
		}
		if code := conn.CloseCode(t, readWait); code != websocket.CloseNormalClosure {
			t.Errorf("close code after close = %d, want %d", code, websocket.CloseNormalClosure)
		}
		late, m := openSocket(t, a, "gala")
		if m.Type != "sold_out" {
			t.Errorf("first message of a socket after close = %+v, want sold_out", m)
		}
		if code := late.CloseCode(t, readWait); code != websocket.CloseNormalClosure {
			t.Errorf("close code of a socket after close = %d, want %d", code, websocket.CloseNormalClosure)
		}
		// The schedulers stop: the sale is off their list, or listed as ended (its line kept closed).
		sales, err := a.store.Sales(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(sales, func(s queue.Sale) bool { return s.ID == "gala" && !s.Ended }) {
			t.Errorf("Store.Sales after close = %+v, want gala gone or ended", sales)
		}
		// Closing twice is harmless and keeps the first time.
		again := adminScreeningOf(t, "POST close again", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/close", ""), http.StatusOK)
		if again.ClosedAt == nil || !again.ClosedAt.Equal(*closed.ClosedAt) {
			t.Errorf("closed_at after a second close = %v, want %v", again.ClosedAt, closed.ClosedAt)
		}

		for _, action := range []string{"pause", "resume", "close"} {
			for _, id := range []string{"nope", "bad%20id"} {
				path := "/api/admin/screenings/" + id + "/" + action
				wantError(t, "POST "+path, a.adminCall(t, http.MethodPost, path, ""), http.StatusNotFound, "UNKNOWN_SCREENING")
			}
		}
	})
}

func TestAdminListsTheInstances(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		var list []queue.Instance
		decode(t, "GET /api/admin/instances", a.adminCall(t, http.MethodGet, "/api/admin/instances", ""), &list)
		if list == nil || len(list) != 0 {
			t.Errorf("GET /api/admin/instances with none reporting = %v, want []", list)
		}

		if err := a.q.Report(context.Background(), "i-1", map[string]int{"s1": 3}); err != nil {
			t.Fatal(err)
		}
		decode(t, "GET /api/admin/instances", a.adminCall(t, http.MethodGet, "/api/admin/instances", ""), &list)
		if len(list) != 1 || list[0].ID != "i-1" || !maps.Equal(list[0].Sockets, map[string]int{"s1": 3}) {
			t.Errorf("GET /api/admin/instances = %+v, want i-1 with 3 sockets on s1", list)
		}
	})
}

func TestAdminStreamSendsLiveFigures(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		if _, err := a.q.Register(context.Background(), "s1", ""); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.ts.URL+"/api/admin/stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminKey)
		res, err := a.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("GET /api/admin/stream = %d %s, want 200 text/event-stream", res.StatusCode, res.Header.Get("Content-Type"))
		}
		var frame struct {
			At         int64            `json:"at"`
			Screenings []adminScreening `json:"screenings"`
			Instances  []queue.Instance `json:"instances"`
		}
		lines := bufio.NewReader(res.Body)
		for frames := 0; frames < 2; {
			line, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			frames++
			if err := json.Unmarshal([]byte(data), &frame); err != nil {
				t.Fatalf("stream frame %s: %v", data, err)
			}
			if frame.At <= 0 || len(frame.Screenings) != 1 || frame.Screenings[0].ID != "s1" || frame.Screenings[0].Line == nil ||
				frame.Screenings[0].Line.Waiting != 1 || frame.Instances == nil {
				t.Errorf("stream frame %d = %s, want s1 with 1 waiting and an instance list", frames, data)
			}
		}
	})
}
