// Command naive is the floor the benchmarks measure waitroom against on the same machine and the same day
// (docs/benchmarks.md, "Live rank at scale" and "Seed-1 replay"): the waiting room's protocol, as far as the
// swarm uses it, served the way the gorilla/websocket chat example serves a room. Everything is in memory
// (no Redis, no database: a line in a slice, a seat in a slice of booleans), each screening behind one
// mutex; each socket has a reading and a writing goroutine, the upgrader's default 1 KiB buffers, a buffered
// channel of outgoing messages and a ping ticker of its own, and each rank push encodes one position per
// waiting socket with encoding/json and hands it to that socket's writer. It is not part of the product.
//
// Two uses:
//
//   - `swarm -mode line` (bench/hub/run.sh NAIVE=true) queues on the screening demo, there from the start,
//     with no seats, admitting -batch every -interval and no cap on the admitted.
//   - `swarm` in flow mode (bench/replay/run.sh NAIVE=true) queues on a screening the script creates with
//     POST /api/admin/screenings (bearer -admin-key): its grid or listed seats (the ids booking.Grid makes),
//     its sale time and its admission settings (interval, batch_size, max_active, active_ttl).
//
// What it serves, as docs/protocol.md says: the socket (a token in a hello with auth=message, or in the
// URL), `queued` or `prequeue` on connect (`admitted` again, or `sold_out`, for a token that has one), the
// pre-queue shuffled at the sale time, a tick at every multiple of the interval admitting up to batch_size
// while fewer than max_active hold a slot, a refill of the slots a reservation or a leave freed, `admitted`
// with a dummy pass (random, unsigned) at once, `position` to every waiting socket after an admission that
// changed the line, at most every -rank-interval (hub.rank_interval's default); `leave`; the screening and
// its seat map in the real server's JSON; reservations with a bearer pass and an optional Idempotency-Key,
// one per pass, named seats or a count (the first free seats in the map's order), 201 with the order's
// JSON, 409 SEAT_TAKEN, SOLD_OUT, NOT_ENOUGH_SEATS, 410 PASS_SPENT, 401 INVALID_PASS; and, once the last
// seat is sold, `sold_out` to every socket and to every later connect, then close 1000. /metrics has the
// `waitroom_hub_sockets` gauge and each screening's seats sold and last sale time; /debug/pprof profiles it.
//
// What it leaves out: the grace (a waiting socket that closes loses its place at once), catch-ups, ETAs,
// pause, hold checkout and orders after the 201, access codes and proofs of work (their hello fields are
// ignored), per-address limits, slow-client handling beyond the chat example's (a full buffer drops the
// socket), several instances, and any persistence: a restart forgets everything.
//
//	go run ./bench/hub/naive -addr 127.0.0.1:18100 -interval 1s -batch 10
//	go run ./bench/hub/naive -addr 127.0.0.1:18300 -admin-key "$KEY"     # then POST /api/admin/screenings
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = pongWait * 9 / 10
	// helloWait bounds the wait for the hello of a socket opened with auth=message.
	helloWait  = 10 * time.Second
	sendBuffer = 256
	// maxMessageSize bounds a client frame; maxHelloSize the hello, which may carry a proof of work.
	maxMessageSize = 512
	maxHelloSize   = 4 << 10
	// maxBodyBytes bounds a reservation's body, maxAdminBodyBytes a screening's.
	maxBodyBytes      = 4096
	maxAdminBodyBytes = 512 << 10
	// maxSeats is booking.max_seats' default: the most seats one reservation may take.
	maxSeats = 4
)

// The real server's admission defaults (config: admission.*), for a create body that leaves them out.
const (
	defaultInterval  = 5 * time.Second
	defaultBatch     = 10
	defaultMaxActive = 100
	defaultActiveTTL = 5 * time.Minute
)

var (
	screeningRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	tokenRe     = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv); err != nil {
		log.Fatal(err)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:18100", "listen address")
	interval := fs.Duration("interval", time.Second, "admission interval of the screening demo")
	batch := fs.Int("batch", 10, "users the screening demo admits per tick")
	adminKey := fs.String("admin-key", getenv("WAITROOM_ADMIN_KEY"), "bearer key of POST /api/admin/screenings (empty: no admin route), default $WAITROOM_ADMIN_KEY")
	rankEvery := fs.Duration("rank-interval", 250*time.Millisecond, "least time between two rank pushes to a screening's waiting sockets (hub.rank_interval)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *interval <= 0 || *batch < 1 {
		return fmt.Errorf("naive: -interval %s and -batch %d: want both above 0", *interval, *batch)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newServer(*adminKey, *rankEvery, *interval, *batch)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	rooms := make(chan struct{})
	go func() { s.Run(ctx); close(rooms) }()
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
		cancel()
	case <-ctx.Done():
		err = srv.Close()
	}
	<-rooms
	return err
}

// server is the screenings, and the sockets open on them.
type server struct {
	adminKey  string
	rankEvery time.Duration
	upgrader  websocket.Upgrader
	sockets   atomic.Int64
	// seeded are the screenings there from the start; created hands a new one to Run, which runs their
	// admission loops.
	seeded  []*room
	created chan *room

	mu    sync.Mutex
	rooms map[string]*room
}

// newServer has the screening demo: no seats, a tick every interval admitting batch, no cap on the admitted.
func newServer(adminKey string, rankEvery, interval time.Duration, batch int) *server {
	now := time.Now().UTC().Truncate(time.Second)
	demo := newRoom("demo", "Demo screening", now.Add(2*time.Hour), now, nil,
		admission{interval: interval, batch: batch, maxActive: 1_000_000, activeTTL: time.Hour})
	return &server{
		adminKey:  adminKey,
		rankEvery: rankEvery,
		upgrader:  websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024, CheckOrigin: func(*http.Request) bool { return true }},
		seeded:    []*room{demo},
		created:   make(chan *room),
		rooms:     map[string]*room{demo.id: demo},
	}
}

// Run runs the admission loop of every screening, those created later included, until ctx ends.
func (s *server) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	start := func(r *room) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.run(ctx, s.rankEvery)
		}()
	}
	for _, r := range s.seeded {
		start(r)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-s.created:
			start(r)
		}
	}
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("POST /api/admin/screenings", s.adminCreate)
	mux.HandleFunc("GET /api/screenings/{id}", s.withRoom(func(w http.ResponseWriter, _ *http.Request, r *room) {
		writeJSON(w, http.StatusOK, r.info(time.Now()))
	}))
	mux.HandleFunc("GET /api/screenings/{id}/seats", s.withRoom(func(w http.ResponseWriter, _ *http.Request, r *room) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(r.seatMap())
	}))
	mux.HandleFunc("POST /api/screenings/{id}/reservations", s.reserve)
	mux.HandleFunc("GET /ws/screenings/{id}", s.socket)
	return mux
}

func (s *server) room(id string) *room {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rooms[id]
}

func (s *server) withRoom(h func(http.ResponseWriter, *http.Request, *room)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		r := s.room(req.PathValue("id"))
		if r == nil {
			writeError(w, http.StatusNotFound, "UNKNOWN_SCREENING", "no such screening", nil)
			return
		}
		h(w, req, r)
	}
}

func (s *server) metrics(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	rooms := make([]*room, 0, len(s.rooms))
	for _, r := range s.rooms {
		rooms = append(rooms, r)
	}
	s.mu.Unlock()
	sort.Slice(rooms, func(i, j int) bool { return rooms[i].id < rooms[j].id })
	fmt.Fprintf(w, "waitroom_hub_sockets %d\n", s.sockets.Load())
	for _, r := range rooms {
		r.mu.Lock()
		sold, last := r.soldN, int64(0)
		if !r.lastSaleAt.IsZero() {
			last = r.lastSaleAt.UnixMilli()
		}
		r.mu.Unlock()
		fmt.Fprintf(w, "waitroom_naive_seats_sold{screening=%q} %d\n", r.id, sold)
		fmt.Fprintf(w, "waitroom_naive_last_sale_ms{screening=%q} %d\n", r.id, last)
	}
}

// apiError is the real server's error body.
type apiError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Seats   []string `json:"seats,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, message string, seats []string) {
	var e apiError
	e.Error.Code, e.Error.Message, e.Error.Seats = code, message, seats
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, status, b)
}

func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// decodeStrict reads one JSON object of at most limit bytes, with no unknown field and nothing after it.
func decodeStrict(w http.ResponseWriter, req *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return errors.New("trailing data")
	}
	return nil
}

// bodyError answers a body decodeStrict refused.
func bodyError(w http.ResponseWriter, err error, message string) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE", "request body too large", nil)
		return
	}
	writeError(w, http.StatusBadRequest, "BAD_REQUEST", message, nil)
}

// wireTime is a time as the socket sends it: UTC with milliseconds.
func wireTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func newToken() string { return randomHex(16) }

// newPass is a dummy pass: unsigned, random, known only to this process.
func newPass() string { return "naive." + randomHex(16) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newOrderCode is 26 lowercase letters and digits, as an order's code is.
func newOrderCode() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 26)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// validKey accepts an absent Idempotency-Key or 1..255 visible ASCII characters.
func validKey(key string) bool {
	if len(key) > 255 {
		return false
	}
	return !strings.ContainsFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e })
}
