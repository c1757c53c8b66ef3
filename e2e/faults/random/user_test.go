//go:build faults

// One virtual user of the random run: its socket, its reconnects, its reservation and what it does with
// the held order.

package random

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// What a user does with its held order.
const (
	intentPay    = "pay"    // pays after a delay that may outlast the hold
	intentLapse  = "lapse"  // never pays: the hold expires
	intentCancel = "cancel" // cancels the hold itself
	intentRefund = "refund" // pays, and the operator cancels (refunds) the order later
)

// api is the users' HTTP client: a request to a paused instance gets no answer within the timeout and is
// sent again, to the next instance.
var api = &http.Client{Timeout: 8 * time.Second}

// runUser is one user: hold a socket (reconnecting with the token when it drops), reserve when admitted
// (retrying a 503, other seats on a 409), queue again when the admission lapsed, until it holds an order
// or the sale sold out; then, off the socket as on a checkout page, do with the order what it intends.
func runUser(servers *fleet, p plan, u *user, acked chan struct{}, deadline time.Time) {
	rng := rand.New(rand.NewPCG(uint64(u.n), 7))
	ackOnce := sync.OnceFunc(func() { close(acked) })
	defer ackOnce() // a user that failed before its place lets the next one go (and the check reports it)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		at := (u.n + attempt) % servers.size()
		wsURL := strings.Replace(servers.url(at), "http://", "ws://", 1) + "/ws/screenings/rnd"
		if u.token != "" {
			wsURL += "?token=" + u.token
		}
		if u.dialedAt.IsZero() {
			u.dialedAt = time.Now()
		}
		conn, resp, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial(wsURL, nil)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		resp.Body.Close()
		done := readSocket(conn, servers, p, at, u, ackOnce, rng, deadline)
		conn.Close()
		if done {
			if u.order != nil {
				follow(servers, at, u, rng, deadline)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	u.err = "deadline"
}

// readSocket serves one connection, to servers' instance at; it reports whether the user is done with the
// line (it holds an order, or the sale sold out).
//
// On the waitlist (sold_out with waitlist) it waits for an offer, until the run says the sale is over
// (servers.over): it then ends on the waitlist, sold out.
func readSocket(conn *websocket.Conn, servers *fleet, p plan, at int, u *user, ack func(), rng *rand.Rand, deadline time.Time) bool {
	read := make(chan struct{})
	defer close(read)
	go func() {
		select {
		case <-servers.over:
			_ = conn.Close() // the sale is over: a read waiting on the waitlist ends
		case <-read:
		}
	}()
	for time.Now().Before(deadline) {
		_ = conn.SetReadDeadline(deadline)
		var m testenv.Message
		if err := conn.ReadJSON(&m); err != nil {
			if isClosed(servers.over) && u.onWaitlist.Load() {
				u.soldOut = true
				return true
			}
			return false // dropped: reconnect with the token
		}
		switch m.Type {
		case "error":
			if m.Code == "BUSY" {
				u.busy++ // its close 1013 follows: reconnect with the token
			}
		case "queued", "prequeue":
			if m.Receipt != "" && !slices.Contains(u.receipts, m.Receipt) {
				u.receipts = append(u.receipts, m.Receipt)
			}
			switch {
			case u.token == "":
				u.token, u.ackedAt = m.Token, time.Now()
			case (m.Token != u.token || m.Inserted) && len(u.admissions) == 0:
				// The place is gone (the check says whether a Redis restart can explain it): the user waits
				// from its new place, and is held to the order from there.
				now := time.Now()
				u.lost = append(u.lost, lostPlace{placedAt: u.ackedAt, at: now})
				u.token, u.ackedAt, u.dialedAt = m.Token, now, now
			}
			ack()
		case "sold_out":
			if m.Waitlist {
				u.waitlisted++
				u.onWaitlist.Store(true)
				continue // it stays on the waitlist
			}
			u.soldOut = true
			return true
		case "admitted", "offered":
			u.onWaitlist.Store(false)
			exp, err := time.Parse(time.RFC3339Nano, m.ExpiresAt)
			if err != nil {
				u.err = "bad expires_at " + m.ExpiresAt
				return true
			}
			if len(u.admissions) > 0 && u.admissions[len(u.admissions)-1] == exp.UnixMilli() {
				continue // the same admission told again (a reconnect, a rebuild)
			}
			u.admissions = append(u.admissions, exp.UnixMilli())
			u.admittedAs = append(u.admittedAs, u.token)
			if m.Type == "offered" {
				u.offers = append(u.offers, offer{token: u.token, expiresAt: exp, seats: m.SeatCount()})
			}
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond) // choosing a seat
			switch o, outcome := reserve(servers, p, at, u, m.Pass, m.SeatCount(), rng, exp); outcome {
			case "held":
				u.order = o
				return true
			case "sold_out":
				u.soldOut = true
				return true
			case "lapsed":
				// The admission is over without an order: queue again from the end (a new place).
				u.requeued = true
				u.token = ""
				return false
			}
		}
	}
	return false
}

// order is an order a user was told of, and what it was told about it since.
type order struct {
	code   string
	holder string // the token it reserved with
	seats  []string
	status string    // as the reservation answered it: held (or, replayed late, what it became)
	heldAt time.Time // when the reservation's 201 arrived
	steps  []step
}

// step is one call on an order (confirm, cancel, refund) and the answer that ended it.
type step struct {
	op     string
	sentAt time.Time // its first attempt was sent
	at     time.Time // the answer arrived
	status int       // 0: no answer before the run's deadline
	code   string    // the error code, "" on 200
	got    string    // the order's status in a 200
	server int       // the instance that answered
	// uncertain attempts went before the answer (no answer, or a 5xx that may have come after the commit):
	// one of them may have made the change the answer then finds done (409 ORDER_CANCELLED to a cancel).
	uncertain int
}

// reserve asks for seats until it holds an order, the screening sold out, or the admission is over, first
// on instance at. Half the users name a seat, the others ask for one or two seats by count; a seat taken
// sends either to the count. A request that gets no answer is retried on the next server, as a client
// behind a load balancer would be: the instance may have died after its commit, and only another one can
// replay it.
//
// An offer's pass (offered > 0 seats) asks for at most that many.
func reserve(servers *fleet, p plan, at int, u *user, pass string, offered int, rng *rand.Rand, expires time.Time) (*order, string) {
	grid := booking.Grid(p.seatRows, p.seatsInRow)
	key := queue.NewToken() // one Idempotency-Key per request body: a retried 503 cannot book twice
	body := map[string]any{"count": 1 + rng.IntN(2)}
	if offered > 0 {
		body = map[string]any{"count": 1 + rng.IntN(offered)}
	}
	if rng.IntN(2) == 0 {
		body = map[string]any{"seats": []string{grid[rng.IntN(len(grid))].ID}}
	}
	again := func(b map[string]any) { body, key = b, queue.NewToken() }

	for time.Now().Before(expires) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, servers.url(at)+"/api/screenings/rnd/reservations", bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+pass)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := api.Do(req)
		if err != nil {
			at++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var out struct {
			Code   string   `json:"code"`
			Status string   `json:"status"`
			Seats  []string `json:"seats"`
			Error  struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if out.Error.Code != "" {
			u.lastRefusal = out.Error.Code
		}
		switch code := out.Error.Code; {
		case resp.StatusCode == http.StatusCreated:
			return &order{code: out.Code, holder: u.token, seats: out.Seats, status: out.Status, heldAt: time.Now()}, "held"
		case code == "SEAT_TAKEN" || code == "SEAT_LOCKED" || code == "LOCK_EXPIRED":
			again(map[string]any{"count": 1})
		case code == "NOT_ENOUGH_SEATS":
			time.Sleep(200 * time.Millisecond) // every seat held or sold: holds lapse, refunds give seats back
			again(map[string]any{"count": 1})
		case code == "SOLD_OUT":
			// Every seat held or sold. Sold out for good only once every seat is sold; while some are only
			// held, wait for them to come back.
			if soldOut(servers, at) {
				return nil, "sold_out"
			}
			time.Sleep(300 * time.Millisecond)
			again(body)
		case resp.StatusCode >= 500:
			time.Sleep(150 * time.Millisecond) // fails closed: try again once the store is back
		case code == "INVALID_PASS" || code == "PASS_SPENT":
			return nil, "lapsed"
		default:
			time.Sleep(150 * time.Millisecond)
		}
	}
	return nil, "lapsed"
}

// soldOut reports whether the screening, as instance at reads it, has every seat sold.
func soldOut(servers *fleet, at int) bool {
	resp, err := api.Get(servers.url(at) + "/api/screenings/rnd")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var s struct {
		State string `json:"state"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&s) == nil && s.State == "sold_out"
}

// follow does with u's held order what u intends: pay after a delay that may outlast the hold, walk away,
// cancel, or pay and have the operator refund it later.
func follow(servers *fleet, at int, u *user, rng *rand.Rand, deadline time.Time) {
	o := u.order
	payDelay := time.Duration(100+rng.IntN(2100)) * time.Millisecond // some land past the 2 s hold
	switch u.intent {
	case intentPay, intentRefund:
		time.Sleep(time.Until(o.heldAt.Add(payDelay)))
		s := call(servers, at, "confirm", "/api/orders/"+o.code+"/confirm", "Bearer "+confirmKey, deadline)
		o.steps = append(o.steps, s)
		if u.intent == intentRefund && s.status == http.StatusOK {
			time.Sleep(time.Duration(200+rng.IntN(2800)) * time.Millisecond)
			o.steps = append(o.steps, call(servers, at, "refund", "/api/admin/orders/"+o.code+"/cancel", "Bearer "+apptest.AdminKey, deadline))
		}
	case intentCancel:
		time.Sleep(time.Until(o.heldAt.Add(time.Duration(100+rng.IntN(1500)) * time.Millisecond)))
		o.steps = append(o.steps, call(servers, at, "cancel", "/api/orders/"+o.code+"/cancel", "", deadline))
	case intentLapse:
		// walks away: the sweeper expires the hold
	}
}

// call posts path with auth (if any) until an answer other than a 5xx arrives, sending it to the next
// instance when an attempt gets no answer; every call is safe to repeat.
func call(servers *fleet, at int, op, path, auth string, deadline time.Time) step {
	s := step{op: op, sentAt: time.Now()}
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodPost, servers.url(at)+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := api.Do(req)
		if err != nil {
			s.uncertain++
			at++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			s.uncertain++
			time.Sleep(150 * time.Millisecond)
			continue
		}
		s.status, s.code, s.at, s.server = resp.StatusCode, apptest.ErrorCode(out), time.Now(), at%servers.size()
		s.got, _ = out["status"].(string)
		return s
	}
	return s
}
