//go:build faults

// One virtual user of the random run: its socket, its reconnects and its reservation.

package random

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// runUser is one user: hold a socket (reconnecting with the token when it drops), reserve when admitted
// (retrying a 503, another seat on a 409), queue again when the admission lapsed, until a ticket or sold
// out.
func runUser(t *testing.T, servers []*apptest.Server, u *user, acked chan struct{}, deadline time.Time) {
	seatRng := rand.New(rand.NewPCG(uint64(u.n), 7))
	ackOnce := sync.OnceFunc(func() { close(acked) })
	defer ackOnce() // a user that failed before its place lets the next one go (and the check reports it)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		at := (u.n + attempt) % len(servers)
		srv := servers[at]
		wsURL := strings.Replace(srv.URL, "http://", "ws://", 1) + "/ws/screenings/rnd"
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
		done := readSocket(conn, servers, at, u, ackOnce, seatRng, deadline)
		conn.Close()
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	u.err = "deadline"
}

// readSocket serves one connection, to servers[at]; it reports whether the user is done.
func readSocket(conn *websocket.Conn, servers []*apptest.Server, at int, u *user, ack func(), rng *rand.Rand, deadline time.Time) bool {
	for time.Now().Before(deadline) {
		_ = conn.SetReadDeadline(deadline)
		var m testenv.Message
		if err := conn.ReadJSON(&m); err != nil {
			return false // dropped: reconnect with the token
		}
		switch m.Type {
		case "queued", "prequeue":
			if u.token == "" {
				u.token, u.ackedAt = m.Token, time.Now()
			}
			ack()
		case "sold_out":
			u.soldOut = true
			return true
		case "admitted":
			exp, err := time.Parse(time.RFC3339Nano, m.ExpiresAt)
			if err != nil {
				u.err = "bad expires_at " + m.ExpiresAt
				return true
			}
			if len(u.admissions) > 0 && u.admissions[len(u.admissions)-1] == exp.UnixMilli() {
				continue // the same admission told again (a reconnect, a rebuild)
			}
			u.admissions = append(u.admissions, exp.UnixMilli())
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond) // choosing a seat
			switch outcome := reserve(servers, at, m.Pass, rng, exp); outcome {
			case "ticket", "sold_out":
				if outcome == "sold_out" {
					u.soldOut = true
				} else {
					u.ticket = "yes"
				}
				return true
			case "lapsed":
				// The admission is over without a ticket: queue again from the end (a new place).
				u.requeued = true
				u.token = ""
				return false
			}
		}
	}
	return false
}

// reserve tries seats until one is booked, the screening sold out, or the admission is over, first on
// servers[at]. A request that gets no answer is retried on the next server, as a client behind a load
// balancer would be: the instance may have died after its commit, and only another one can replay it.
func reserve(servers []*apptest.Server, at int, pass string, rng *rand.Rand, expires time.Time) string {
	srv := servers[at]
	seatIDs := make([]string, 0, seatCount)
	for r := 0; r < 4; r++ {
		for n := 1; n <= seatCount/4; n++ {
			seatIDs = append(seatIDs, fmt.Sprintf("%c%d", 'A'+r, n))
		}
	}
	key := queue.NewToken() // one Idempotency-Key per attempt at a seat: a retried 503 cannot book twice
	seat := seatIDs[rng.IntN(len(seatIDs))]
	for time.Now().Before(expires) {
		body, _ := json.Marshal(map[string]any{"seats": []string{seat}})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/screenings/rnd/reservations", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+pass)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			at = (at + 1) % len(servers)
			srv = servers[at]
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		switch code := apptest.ErrorCode(out); {
		case resp.StatusCode == http.StatusCreated:
			return "ticket"
		case code == "SOLD_OUT":
			return "sold_out"
		case code == "SEAT_TAKEN" || code == "SEAT_LOCKED" || code == "LOCK_EXPIRED":
			seat, key = seatIDs[rng.IntN(len(seatIDs))], queue.NewToken()
		case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode >= 500:
			time.Sleep(150 * time.Millisecond) // fails closed: try again once the store is back
		case code == "INVALID_PASS" || code == "PASS_SPENT":
			return "lapsed"
		default:
			time.Sleep(150 * time.Millisecond)
		}
	}
	return "lapsed"
}
