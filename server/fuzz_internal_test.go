package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// The fuzz targets of the server's decoders of outside input: the admin bodies (decodeStrict into
// admissionBody and createBody, then admissionBody.settings), the Idempotency-Key (validKey), and, through
// the HTTP handler, the reservation body of (*Server).reserve, which is decoded inline, and the admin
// routes end to end. Seeds: testdata/fuzz/<FuzzName>. The HTTP targets run on the embedded backends;
// WAITROOM_FUZZ_BACKEND=real runs them on the real Redis and PostgreSQL instead.

const (
	fuzzAdminKey = "fuzz-admin-key-0123456789"
	// fuzzRows × fuzzPerRow is the catalog of screening fz1, which the reservation target books from.
	fuzzRows, fuzzPerRow = 26, 40
	fuzzMaxSeats         = 4
)

var (
	fuzzSecret   = []byte("fuzz-secret-0123456789abcdef0123456789")
	fuzzDefaults = queue.Settings{Interval: time.Second, BatchSize: 10, MaxActive: 100, ActiveTTL: 2 * time.Minute}
)

// adminContext builds the request and recorder of an admin call carrying body, for decodeStrict to read.
func adminContext(body []byte) (*httptest.ResponseRecorder, *http.Request) {
	req := httptest.NewRequest(http.MethodPost, "/api/admin/screenings", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return httptest.NewRecorder(), req
}

// wantClear checks a refusal: a non-empty message, and a status below 500 with a code and a message
// once classify maps it, as every error of a bad body must be.
func wantClear(t *testing.T, what string, err error) (int, apiErrorBody) {
	t.Helper()
	if err.Error() == "" {
		t.Fatalf("%s: error with an empty message (%#v)", what, err)
	}
	status, body := classify(err)
	if status < 400 || status >= 500 || body.Code == "" || body.Message == "" {
		t.Fatalf("%s: %v classifies as %d %+v, want a 4xx with a code and a message", what, err, status, body)
	}
	return status, body
}

// jsonObjectOrNull reports whether data, trimmed of white space, is a JSON object or the literal null.
// decodeStrict takes null as {} (encoding/json leaves the target alone); see the report of issue 7.
func jsonObjectOrNull(data []byte) bool {
	data = bytes.TrimSpace(data)
	return json.Valid(data) && (bytes.HasPrefix(data, []byte("{")) || string(data) == "null")
}

// FuzzDecodeAdmission: PATCH /api/admin/screenings/{id}/admission. decodeStrict refuses with errBadAdminBody
// or a *http.MaxBytesError; settings() refuses with booking.ErrBadScreening; an accepted body is one JSON
// object whose durations are positive, whose counts are not negative, and which reproduces its fields; and
// queue.Settings.Validate, the store's gate before any SQL, either passes it or refuses it as
// ErrBadSettings (a 400, never a 500).
func FuzzDecodeAdmission(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var body admissionBody
		if !decodeAdmin(t, data, maxBodyBytes, &body) {
			return
		}
		if len(data) > maxBodyBytes {
			t.Fatalf("decodeStrict accepted %d bytes, limit %d", len(data), maxBodyBytes)
		}
		s, err := body.settings()
		if err != nil {
			if !errors.Is(err, booking.ErrBadScreening) {
				t.Fatalf("settings(%+v) = %v, want ErrBadScreening", body, err)
			}
			wantClear(t, fmt.Sprintf("settings(%+v)", body), err)
			return
		}
		checkSettingsOf(t, body, s)
	})
}

// decodeAdmin decodes data into v as an admin handler does (decodeStrict) and reports whether it was
// accepted: a refusal must be errBadAdminBody or a *http.MaxBytesError with a clear message, and what is
// accepted must be one JSON object.
func decodeAdmin(t *testing.T, data []byte, limit int64, v any) bool {
	t.Helper()
	rec, req := adminContext(data)
	c := echo.New().NewContext(req, rec)
	if err := decodeAdminBody(c, limit, v); err != nil {
		var tooBig *http.MaxBytesError
		if !errors.Is(err, errBadAdminBody) && !errors.As(err, &tooBig) {
			t.Fatalf("decodeStrict(%q) = %v, want errBadAdminBody or MaxBytesError", data, err)
		}
		wantClear(t, fmt.Sprintf("decodeStrict(%q)", data), err)
		return false
	}
	if !jsonObjectOrNull(data) {
		t.Fatalf("decodeStrict(%q) accepted what is not one JSON object", data)
	}
	return true
}

// checkSettingsOf checks what settings() made of an accepted admissionBody.
func checkSettingsOf(t *testing.T, body admissionBody, s queue.Settings) {
	t.Helper()
	for _, d := range []struct {
		name string
		wire string
		got  time.Duration
	}{{"interval", body.Interval, s.Interval}, {"active_ttl", body.ActiveTTL, s.ActiveTTL}} {
		if d.wire == "" {
			if d.got != 0 {
				t.Fatalf("settings(%+v).%s = %s for an absent field, want 0", body, d.name, d.got)
			}
			continue
		}
		want, err := time.ParseDuration(d.wire)
		if err != nil || want <= 0 || d.got != want {
			t.Fatalf("settings(%+v).%s = %s, want ParseDuration(%q) = %s, %v, positive", body, d.name, d.got, d.wire, want, err)
		}
	}
	if s.BatchSize != body.BatchSize || s.MaxActive != body.MaxActive || s.BatchSize < 0 || s.MaxActive < 0 {
		t.Fatalf("settings(%+v) = %+v: counts changed or negative", body, s)
	}
	if err := s.Validate(); err != nil {
		if !errors.Is(err, queue.ErrBadSettings) {
			t.Fatalf("Validate(%+v) = %v, want nil or ErrBadSettings", s, err)
		}
		wantClear(t, fmt.Sprintf("Validate(%+v)", s), err)
		return
	}
	// Settings the store takes run: the effective settings (defaults filled in) make a body that reads
	// back to themselves.
	eff := s.Merge(fuzzDefaults)
	again, err := bodyOf(eff).settings()
	if err != nil || again != (queue.Settings{Interval: eff.Interval, BatchSize: eff.BatchSize, MaxActive: eff.MaxActive, ActiveTTL: eff.ActiveTTL}) {
		t.Fatalf("bodyOf(%+v).settings() = %+v, %v; want the same settings", eff, again, err)
	}
}

// FuzzDecodeCreate: POST /api/admin/screenings, as far as adminCreate goes before the store: decodeStrict,
// the seats (booking.SeatsFromIDs) and the admission settings. Every refusal is a clear 4xx; an accepted
// listed catalog is exactly the ids sent, each once, each well formed.
func FuzzDecodeCreate(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var body createBody
		if !decodeAdmin(t, data, maxAdminBodyBytes, &body) {
			return
		}
		if len(body.Seats) > 0 && len(body.Seats) <= booking.MaxSeatsPerScreening {
			seats, err := booking.SeatsFromIDs(body.Seats)
			if err != nil {
				if !errors.Is(err, booking.ErrBadScreening) {
					t.Fatalf("SeatsFromIDs(%q) = %v, want ErrBadScreening", body.Seats, err)
				}
				wantClear(t, "SeatsFromIDs", err)
			} else {
				ids := make([]string, len(seats))
				for i, s := range seats {
					ids[i] = s.ID
					if s.Row+strconv.Itoa(s.Number) != s.ID || s.Number < 1 || s.Number > booking.MaxSeatsPerRow {
						t.Fatalf("SeatsFromIDs made seat %+v", s)
					}
				}
				if !slices.Equal(ids, body.Seats) {
					t.Fatalf("SeatsFromIDs(%q) ids = %q", body.Seats, ids)
				}
			}
		}
		if body.Admission != nil {
			s, err := body.Admission.settings()
			if err != nil {
				if !errors.Is(err, booking.ErrBadScreening) {
					t.Fatalf("settings(%+v) = %v, want ErrBadScreening", *body.Admission, err)
				}
				wantClear(t, "settings", err)
				return
			}
			checkSettingsOf(t, *body.Admission, s)
		}
	})
}

// FuzzValidKey: an Idempotency-Key is accepted exactly when it is at most 255 bytes of visible ASCII
// (absent: ""), and an accepted key is a valid HTTP header value, so it survives the wire unchanged.
func FuzzValidKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, key string) {
		want := len(key) <= maxKeyLen
		for _, r := range []byte(key) {
			if r <= ' ' || r > '~' {
				want = false
			}
		}
		if got := validKey(key); got != want {
			t.Fatalf("validKey(%q) = %v, want %v", key, got, want)
		}
		if want && key != "" {
			h := http.Header{}
			h.Set("Idempotency-Key", key)
			var buf bytes.Buffer
			if err := h.Write(&buf); err != nil || buf.String() != "Idempotency-Key: "+key+"\r\n" {
				t.Fatalf("accepted key %q does not travel as a header: %q, %v", key, buf.String(), err)
			}
		}
	})
}

// fuzzServer is a Server over one Env, called in process through its handler.
type fuzzServer struct {
	env    *testenv.Env
	s      *Server
	q      *queue.Queue
	passes *pass.Issuer
	log    *testenv.SyncBuffer
}

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	kind := testenv.Embedded
	if os.Getenv("WAITROOM_FUZZ_BACKEND") == "real" {
		kind = testenv.Real
	}
	env := testenv.New(f, kind)
	env.Demo(f, "fz1", fuzzRows, fuzzPerRow)
	logs := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	q := queue.New(env.Redis, env.Prefix)
	passes := pass.NewSecretIssuer(fuzzSecret)
	store := booking.NewStore(env.DB)
	book := booking.New(store, q, q, passes, booking.Settings{
		LockWait: 200 * time.Millisecond, LockLease: 10 * time.Second, MaxSeats: fuzzMaxSeats,
	})
	reg := prometheus.NewRegistry()
	h := hub.New(q, passes, q, reg, log)
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	s := New(Deps{Queue: q, Store: store, Booking: book, Hub: h, Redis: env.Redis, Gatherer: reg, Log: log,
		AdminKey: fuzzAdminKey, AdmissionDefaults: fuzzDefaults, Entry: entry.New(entry.Deps{Lines: q, Store: store, Log: log})})
	return &fuzzServer{env: env, s: s, q: q, passes: passes, log: logs}
}

// serve sends one request through the handler and returns the recorder.
func (fs *fuzzServer) serve(method, path, auth, key string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://waitroom.test"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	fs.s.Handler().ServeHTTP(rec, req)
	return rec
}

// pass returns a pass for screening fz1: of a fresh admission when admitted (and the line is still open),
// otherwise well signed for a token the line never admitted (it verifies, then CheckPass refuses it).
func (fs *fuzzServer) pass(t *testing.T, admitted bool) string {
	t.Helper()
	ctx := context.Background()
	if admitted {
		e, err := fs.q.Register(ctx, "fz1", "")
		if err == nil {
			_, active, cerr := fs.q.Counts(ctx, "fz1")
			if cerr != nil {
				t.Fatal(cerr)
			}
			res, aerr := fs.q.Admit(ctx, "fz1", time.Now(), queue.Settings{
				BatchSize: 1, MaxActive: int(active) + 1, ActiveTTL: time.Minute, LockTTL: time.Second, Interval: time.Second,
			})
			if aerr != nil {
				t.Fatal(aerr)
			}
			if slices.Contains(res.Admitted, e.Token) {
				p, err := fs.passes.Issue("fz1", e.Token, res.ExpiresAt)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
		} else if !errors.Is(err, queue.ErrClosed) {
			t.Fatal(err)
		}
		// Sold out (the line is closed): fall through to a pass nobody holds a slot for.
	}
	p, err := fs.passes.Issue("fz1", queue.NewToken(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fuzzError is the documented error body, read strictly.
type fuzzError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Seats   []string `json:"seats"`
	} `json:"error"`
}

// wantErrorBody checks a refusal through HTTP: a 4xx (never a 5xx) whose body is exactly the JSON error shape.
func (fs *fuzzServer) wantErrorBody(t *testing.T, what string, rec *httptest.ResponseRecorder) fuzzError {
	t.Helper()
	if rec.Code < 400 || rec.Code >= 500 {
		t.Fatalf("%s = %d %s, want a 4xx\nlog:\n%s", what, rec.Code, rec.Body, fs.log)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s = %d with Content-Type %q, want JSON", what, rec.Code, ct)
	}
	var e fuzzError
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("%s = %d body %s: %v, want {\"error\":{\"code\":…,\"message\":…}}", what, rec.Code, rec.Body, err)
	}
	return e
}

// reserveDecodes is an independent reading of a reservation body: one JSON value (an object with only
// "seats", or null) and nothing after it, within the size limit.
func reserveDecodes(data []byte) (reserveBody, bool) {
	var b reserveBody
	if len(data) > maxBodyBytes {
		return b, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return b, false
	}
	return b, true
}

// FuzzReserveHTTP: POST /api/screenings/{screening}/reservations with any body and Idempotency-Key, and a
// pass of a live admission (admitted) or one that verifies but holds no slot. The answer is 201 or a 4xx,
// never a 5xx; a refusal is the JSON error body; a malformed body or key is a 400 (or a 413) before
// anything else; a 201 booked exactly the seats asked for, sorted, each once, each in the catalog.
func FuzzReserveHTTP(f *testing.F) {
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, screening string, body []byte, key string, admitted bool) {
		pass := fs.pass(t, admitted)
		path := "/api/screenings/" + url.PathEscape(screening) + "/reservations"
		what := fmt.Sprintf("POST %s %q key %q", path, body, key)
		rec := fs.serve(http.MethodPost, path, "Bearer "+pass, key, body)
		t.Logf("%.200s = %d %.200s", what, rec.Code, rec.Body)
		if rec.Code == http.StatusCreated {
			checkCreated(t, what, rec, screening, body)
			return
		}
		e := fs.wantErrorBody(t, what, rec)
		if screening != "fz1" {
			return // another route, or an unknown screening: a 404 or the like, checked above
		}
		b, ok := reserveDecodes(body)
		switch {
		case !ok:
			if e.Error.Code != "BAD_REQUEST" && e.Error.Code != "BODY_TOO_LARGE" {
				t.Fatalf("%s = %d %s, want BAD_REQUEST or BODY_TOO_LARGE for a malformed body", what, rec.Code, rec.Body)
			}
		case !validKey(key):
			if rec.Code != http.StatusBadRequest || e.Error.Code != "BAD_REQUEST" {
				t.Fatalf("%s = %d %s, want 400 BAD_REQUEST for a bad key", what, rec.Code, rec.Body)
			}
		case len(b.Seats) == 0 || len(b.Seats) > fuzzMaxSeats:
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("%s = %d %s, want 400 for %d seats", what, rec.Code, rec.Body, len(b.Seats))
			}
		}
	})
}

// checkCreated checks a 201: the reservation of exactly the seats sent, sorted, each once, in fz1's catalog.
func checkCreated(t *testing.T, what string, rec *httptest.ResponseRecorder, screening string, body []byte) {
	t.Helper()
	var r booking.Reservation
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("%s = 201 %s: %v", what, rec.Body, err)
	}
	sent, ok := reserveDecodes(body)
	if !ok || screening != "fz1" || r.Screening != "fz1" {
		t.Fatalf("%s = 201 %s for a body the handler should refuse", what, rec.Body)
	}
	want := slices.Sorted(slices.Values(sent.Seats))
	if !slices.Equal(r.Seats, want) || len(r.Seats) == 0 || len(r.Seats) > fuzzMaxSeats {
		t.Fatalf("%s = 201 seats %q, want %q", what, r.Seats, want)
	}
	for i, s := range r.Seats {
		if i > 0 && r.Seats[i-1] >= s {
			t.Fatalf("%s = 201 seats %q: not sorted and unique", what, r.Seats)
		}
		if !inGrid(s) {
			t.Fatalf("%s = 201 seat %q is not in the catalog", what, s)
		}
	}
}

// inGrid reports whether id is a seat of fz1: a row A..Z and a number 1..fuzzPerRow, as booking.Grid makes.
func inGrid(id string) bool {
	if len(id) < 2 || id[0] < 'A' || id[0] >= 'A'+fuzzRows {
		return false
	}
	n, err := strconv.Atoi(id[1:])
	return err == nil && n >= 1 && n <= fuzzPerRow && strconv.Itoa(n) == id[1:]
}

// FuzzAdminHTTP: the admin bodies end to end (create when create is set, otherwise a change of fz1's
// admission). The answer is a 2xx or a 4xx, never a 5xx; a refusal is the JSON error body; what the
// operator is shown after an accepted body has settings that pass queue.Settings.Validate, and a created
// screening has exactly the seats asked for and can be listed.
func FuzzAdminHTTP(f *testing.F) {
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, create bool, body []byte) {
		method, path := http.MethodPatch, "/api/admin/screenings/fz1/admission"
		if create {
			method, path = http.MethodPost, "/api/admin/screenings"
		}
		what := fmt.Sprintf("%s %s %q", method, path, body)
		if create {
			if reason := knownCreateBug(body); reason != "" {
				t.Skipf("known bug (issue 7 report, left for the owner of booking/server): %s", reason)
			}
		}
		rec := fs.serve(method, path, "Bearer "+fuzzAdminKey, "", body)
		t.Logf("%.200s = %d %.300s", what, rec.Code, rec.Body)
		if rec.Code >= 300 {
			fs.wantErrorBody(t, what, rec)
			return
		}
		var got struct {
			ID         string        `json:"id"`
			SeatsTotal int           `json:"seats_total"`
			Admission  admissionBody `json:"admission"`
		}
		if create {
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusCreated {
				t.Fatalf("%s = %d %s: %v, want 201 and the screening", what, rec.Code, rec.Body, err)
			}
			var sent createBody
			_ = json.Unmarshal(body, &sent)
			wantSeats := len(sent.Seats)
			if wantSeats == 0 {
				wantSeats = sent.Rows * sent.SeatsPerRow
			}
			if got.ID != sent.ID || got.SeatsTotal != wantSeats {
				t.Fatalf("%s = 201 %s, want screening %q with %d seats", what, rec.Body, sent.ID, wantSeats)
			}
			// The new screening must not break the public list (every screening is marshalled there).
			if list := fs.serve(http.MethodGet, "/api/screenings", "", "", nil); list.Code != http.StatusOK {
				t.Fatalf("after %s: GET /api/screenings = %d %s\nlog:\n%s", what, list.Code, list.Body, fs.log)
			}
		} else if err := json.Unmarshal(rec.Body.Bytes(), &got.Admission); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("%s = %d %s: %v, want 200 and the settings", what, rec.Code, rec.Body, err)
		}
		s, err := got.Admission.settings()
		if err != nil {
			t.Fatalf("%s = %d admission %+v: %v", what, rec.Code, got.Admission, err)
		}
		if err := s.Validate(); err != nil || s.Interval <= 0 || s.BatchSize <= 0 || s.MaxActive <= 0 || s.ActiveTTL <= 0 {
			t.Fatalf("%s = %d effective admission %+v: Validate = %v, want complete settings that pass", what, rec.Code, s, err)
		}
	})
}

// knownCreateBug names a bug of POST /api/admin/screenings this target found that is not fixed yet, so the
// fuzzer can look past it. None is open: the two it found (a time outside the years JSON and SQLite can
// hold, a name with a NUL byte) are refused with BAD_SCREENING now, and their seeds check it.
func knownCreateBug([]byte) string { return "" }
