// The seed's baseline, served in this process: a SELECT … FOR UPDATE transaction per reservation through a
// pool of 30 connections.

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// baselinePoolSize is the seed's HikariCP pool: 30 connections.
const baselinePoolSize = 30

// baseline is the seed's starting point, served from this process: every request opens a transaction,
// locks its seat row with SELECT … FOR UPDATE, checks whether the seat is sold, and either rolls back (409)
// or inserts the reservation (201), holding its pool connection the whole time, lock wait included. It
// writes the same tables as the server (reservations, reservation_seats with its UNIQUE constraint), for its
// own screening. It checks no pass: the seed's baseline had no waiting room in front of it.
type baseline struct {
	db        *sqlx.DB
	srv       *http.Server
	url       string
	ping      string // GET: 204, for -warm
	screening string

	waiting     atomic.Int64 // requests waiting for a pool connection now
	peakWaiting atomic.Int64
}

// startBaseline serves POST /baseline/reservations on 127.0.0.1:0. The pool opens no connection before the
// burst. Its driver sends each statement in one round trip, as the seed's JDBC driver does and as the
// server's does (booking.Open).
func startBaseline(benchURL, screening string) (*baseline, error) {
	sep := "?"
	if strings.Contains(benchURL, "?") {
		sep = "&"
	}
	db, err := sqlx.Open("postgres", benchURL+sep+"binary_parameters=yes")
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	db.SetMaxOpenConns(baselinePoolSize)
	db.SetMaxIdleConns(baselinePoolSize)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("baseline: %w", err)
	}
	b := &baseline{db: db, screening: screening, url: "http://" + ln.Addr().String() + "/baseline/reservations",
		ping: "http://" + ln.Addr().String() + "/baseline/ping"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /baseline/reservations", b.reserve)
	mux.HandleFunc("GET /baseline/ping", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = b.srv.Serve(ln) }() // ends when close shuts the server down
	return b, nil
}

func (b *baseline) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.srv.Shutdown(ctx)
	_ = b.db.Close()
}

// releasePool closes the pool's connections once the burst is over: their backends report their
// transaction counts as they exit.
func (b *baseline) releasePool() { _ = b.db.Close() }

func (b *baseline) poolStats(context.Context) (poolStats, error) {
	s := b.db.Stats()
	return poolStats{waits: s.WaitCount, waitTime: s.WaitDuration, cpu: -1}, nil
}

// peakWaiters is the most requests that waited for a pool connection at one moment (the seed's "threads
// awaiting connection").
func (b *baseline) peakWaiters() int64 { return b.peakWaiting.Load() }

func (b *baseline) reserve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Seats []string `json:"seats"`
	}
	user := r.Header.Get("X-User")
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Seats) != 1 || user == "" {
		http.Error(w, `want X-User and {"seats":["A1"]}`, http.StatusBadRequest)
		return
	}
	status, err := b.book(r.Context(), user, body.Seats[0])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
}

// book is the pessimistic path: one transaction on one pool connection, the seat row locked first.
func (b *baseline) book(ctx context.Context, user, seat string) (int, error) {
	if n := b.waiting.Add(1); n > b.peakWaiting.Load() {
		for peak := b.peakWaiting.Load(); n > peak && !b.peakWaiting.CompareAndSwap(peak, n); peak = b.peakWaiting.Load() {
		}
	}
	conn, err := b.db.Connx(ctx)
	b.waiting.Add(-1)
	if err != nil {
		return 0, err
	}
	defer conn.Close()

	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var locked string
	err = tx.GetContext(ctx, &locked, `SELECT seat_id FROM seats WHERE screening_id = $1 AND seat_id = $2 FOR UPDATE`, b.screening, seat)
	if errors.Is(err, sql.ErrNoRows) {
		return http.StatusNotFound, nil
	}
	if err != nil {
		return 0, err
	}
	var sold bool
	if err := tx.GetContext(ctx, &sold, `SELECT EXISTS (SELECT 1 FROM reservation_seats WHERE screening_id = $1 AND seat_id = $2 AND live)`, b.screening, seat); err != nil {
		return 0, err
	}
	if sold {
		return http.StatusConflict, tx.Rollback()
	}
	var id int64
	if err := tx.GetContext(ctx, &id, `INSERT INTO reservations (screening_id, holder, pass_id, code) VALUES ($1, $2, $3, $3) RETURNING id`,
		b.screening, user, "baseline-"+user); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO reservation_seats (reservation_id, screening_id, seat_id) VALUES ($1, $2, $3)`,
		id, b.screening, seat); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return http.StatusCreated, nil
}
