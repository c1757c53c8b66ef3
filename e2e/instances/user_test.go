// A virtual user: its sockets, what each received, its reconnects to a live instance, and its
// reservation.

package instances

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// message is a server message as one socket received it.
type message struct {
	testenv.Message
	at time.Time
}

func (m message) String() string {
	switch m.Type {
	case "queued":
		return fmt.Sprintf("queued rank %d of %d (inserted %v)", m.Rank, m.Total, m.Inserted)
	case "prequeue":
		return fmt.Sprintf("prequeue of %d (inserted %v)", m.Total, m.Inserted)
	case "position":
		return fmt.Sprintf("position rank %d of %d tick_at %d", m.Rank, m.Total, m.TickAt)
	case "admitted":
		return fmt.Sprintf("admitted %s until %s", m.Token, m.ExpiresAt)
	}
	return fmt.Sprintf("%s %s", m.Type, m.Code)
}

// connection is one connection of a user, and what it saw.
type connection struct {
	inst int
	msgs []message
	// How it ended: a close frame's code and text, or 0 (the peer vanished, or the user closed it).
	closeCode int
	closeText string
	closedAt  time.Time
	// For a reconnect: the line's epoch before dialling and after reading the first message, and the token's
	// ZRANK and the line's ZCARD read right after that message (-1 when not waiting).
	reconnect               bool
	epochBefore, epochAfter int64
	zrank, zcard            int64
}

// user is one virtual user: a token, its connections, and how it ended.
type user struct {
	n     int
	token string
	seq   int64

	mu       sync.Mutex
	conn     *websocket.Conn // the open one
	conns    []*connection
	pass     string // the first pass received
	passCh   chan struct{}
	doneCh   chan struct{} // closed once outcome is set
	outcome  string        // "reserved", "sold_out" or "left" once it is over
	seats    []string
	reserveN int // 201 answers
	leaving  bool
}

// at says which instance the user's latest connection (one that read its first message) is on.
func (u *user) at() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns[len(u.conns)-1].inst
}

func (u *user) over() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.outcome
}

func (u *user) finish(outcome string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.outcome == "" {
		u.outcome = outcome
		close(u.doneCh)
	}
}

// follow reads the user's sockets until it is over, reconnecting with its token (to a live instance) when
// a socket drops for any reason but its own end.
func (c *fleet) follow(u *user, deadline time.Time) {
	t := c.t
	u.mu.Lock()
	conn, cn := u.conn, u.conns[0]
	u.mu.Unlock()
	for {
		c.read(u, conn, cn, deadline)
		if u.over() != "" || c.stopped() {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("user %d: not done by its deadline", u.n)
			return
		}
		// Reconnect after a short random pause (docs/protocol.md: 0–2 s after 1012; shorter here).
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
		for {
			if time.Now().After(deadline) || u.over() != "" || c.stopped() {
				return
			}
			i := c.pick(cn.inst)
			if i < 0 {
				t.Errorf("user %d: no live instance to reconnect to", u.n)
				return
			}
			next := &connection{inst: i, reconnect: true, zrank: -1, zcard: -1}
			next.epochBefore = c.epoch()
			var first message
			var err error
			conn, first, err = c.dial(i, u.token)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue // the instance went away meanwhile
			}
			next.msgs = []message{first}
			if first.Type == "queued" {
				ctx := context.Background()
				key := queue.Key(c.env.Prefix, screening, "waiting")
				if r, err := c.env.Redis.ZRank(ctx, key, u.token).Result(); err == nil {
					next.zrank = r
				}
				next.zcard = c.env.Redis.ZCard(ctx, key).Val()
			}
			next.epochAfter = c.epoch()
			u.mu.Lock()
			u.conn, cn = conn, next
			u.conns = append(u.conns, next)
			u.mu.Unlock()
			c.note(u, first)
			break
		}
	}
}

// read records every message of one connection until it ends.
func (c *fleet) read(u *user, conn *websocket.Conn, cn *connection, deadline time.Time) {
	for {
		_ = conn.SetReadDeadline(deadline)
		var m message
		err := conn.ReadJSON(&m)
		now := time.Now()
		if err != nil {
			u.mu.Lock()
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				cn.closeCode, cn.closeText = ce.Code, ce.Text
			}
			cn.closedAt = now
			leaving := u.leaving
			u.mu.Unlock()
			conn.Close()
			switch {
			case cn.closeCode == websocket.CloseNormalClosure && cn.closeText == "left" && leaving:
				u.finish("left")
			case cn.closeCode == websocket.CloseNormalClosure && cn.closeText == "sold out":
				u.finish("sold_out")
			}
			return
		}
		m.at = now
		u.mu.Lock()
		cn.msgs = append(cn.msgs, m)
		u.mu.Unlock()
		c.note(u, m)
	}
}

// note acts on a message: a pass lets the user reserve, sold_out ends it.
func (c *fleet) note(u *user, m message) {
	switch m.Type {
	case "admitted":
		u.mu.Lock()
		if u.pass == "" {
			u.pass = m.Pass
			close(u.passCh)
		}
		u.mu.Unlock()
	case "sold_out":
		u.finish("sold_out")
	}
}

// reserve waits for the user's pass and the gate, then reserves one seat through a live instance: the seats
// in order from one of its own, the next one when a seat is taken. One Idempotency-Key per user makes a retry
// after a lost answer safe.
func (c *fleet) reserve(u *user, deadline time.Time) {
	t := c.t
	for _, wait := range []chan struct{}{u.passCh, c.gate} {
		select {
		case <-wait:
		case <-u.doneCh:
			return
		case <-c.stop:
			return
		}
	}
	u.mu.Lock()
	pass := u.pass
	u.mu.Unlock()
	seats := seatIDs()
	at := u.n % len(seats)
	for time.Now().Before(deadline) {
		if u.over() != "" || c.stopped() {
			return // told sold out on its socket, or the test is over
		}
		i := c.pick(-1)
		if i < 0 {
			t.Errorf("user %d: no live instance to reserve through", u.n)
			return
		}
		seat := seats[at%len(seats)]
		code, body, err := c.post(c.procs[i].URL, pass, u.token, seat)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		switch e := apptest.ErrorCode(body); {
		case code == http.StatusCreated:
			u.mu.Lock()
			u.reserveN++
			u.seats = nil
			list, _ := body["seats"].([]any)
			for _, s := range list {
				seat, _ := s.(string)
				u.seats = append(u.seats, seat)
			}
			// It may have taken the last seat: then its socket may be told sold out before this answer is read.
			if u.outcome == "" {
				close(u.doneCh)
			}
			u.outcome = "reserved"
			// After 201 the client closes its socket and forgets the token.
			if u.conn != nil {
				u.conn.Close()
			}
			u.mu.Unlock()
			return
		case code == http.StatusConflict && e == "SOLD_OUT":
			u.finish("sold_out")
			return
		case code == http.StatusConflict && e == "SEAT_TAKEN":
			at++
		case code == http.StatusConflict && (e == "SEAT_LOCKED" || e == "LOCK_EXPIRED"), code >= 500:
			time.Sleep(20 * time.Millisecond)
		default:
			t.Errorf("user %d reserve %s through instance %d: %d %v", u.n, seat, i, code, body)
			return
		}
	}
	t.Errorf("user %d: no seat by its deadline", u.n)
}

func (c *fleet) post(baseURL, pass, key, seat string) (int, map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"seats": []string{seat}})
	req, err := http.NewRequest(http.MethodPost, baseURL+"/api/screenings/"+screening+"/reservations", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+pass)
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, out, nil
}

// dial opens a socket to instance i with token and reads its first message.
func (c *fleet) dial(i int, token string) (*websocket.Conn, message, error) {
	u := strings.Replace(c.procs[i].URL, "http://", "ws://", 1) + "/ws/screenings/" + screening
	if token != "" {
		u += "?token=" + token
	}
	conn, resp, err := c.dialer.Dial(u, nil)
	if err != nil {
		return nil, message{}, err
	}
	resp.Body.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var m message
	if err := conn.ReadJSON(&m); err != nil {
		conn.Close()
		return nil, message{}, err
	}
	m.at = time.Now()
	return conn, m, nil
}
