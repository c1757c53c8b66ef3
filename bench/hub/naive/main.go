// Command naive is the reference the hub benchmark measures waitroom against on the same machine and the
// same day (docs/benchmarks.md, "Live rank at scale"): the waiting room's socket protocol, as far as
// `swarm -mode line` uses it, served the way the gorilla/websocket chat example serves a room. Everything is
// in memory (no Redis, no database: a line in a slice), each socket has a reading and a writing goroutine,
// the upgrader's default 1 KiB buffers, a buffered channel of outgoing messages and a ping ticker of its
// own, and each tick encodes one position per waiting socket with encoding/json and hands it to that
// socket's writer. It is not part of the product, and speaks only what the benchmark needs: `queued` on
// connect, `admitted` (with a dummy pass) and `position` after every tick, an empty seat map, and a
// `waitroom_hub_sockets` gauge on /metrics.
//
//	go run ./bench/hub/naive -addr 127.0.0.1:18100 -interval 1s -batch 10
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = pongWait * 9 / 10
	sendBuffer = 256
)

type client struct {
	conn  *websocket.Conn
	send  chan []byte
	token string
}

type room struct {
	mu      sync.Mutex
	waiting []*client // in order of arrival: index i has rank i+1
	sockets int
}

type position struct {
	Type   string `json:"type"`
	Rank   int    `json:"rank"`
	Total  int    `json:"total"`
	TickAt int64  `json:"tick_at"`
}

type queued struct {
	Type  string `json:"type"`
	Token string `json:"token"`
	Rank  int    `json:"rank"`
	Total int    `json:"total"`
}

type admitted struct {
	Type      string `json:"type"`
	Token     string `json:"token"`
	Pass      string `json:"pass"`
	ExpiresAt string `json:"expires_at"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18100", "listen address")
	interval := flag.Duration("interval", time.Second, "admission interval")
	batch := flag.Int("batch", 10, "users admitted per tick")
	flag.Parse()

	r := &room{}
	upgrader := websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024, CheckOrigin: func(*http.Request) bool { return true }}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		r.mu.Lock()
		n := r.sockets
		r.mu.Unlock()
		fmt.Fprintf(w, "waitroom_hub_sockets %d\n", n)
	})
	mux.HandleFunc("GET /api/screenings/{id}/seats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, "[]")
	})
	mux.HandleFunc("GET /ws/screenings/{id}", func(w http.ResponseWriter, req *http.Request) {
		conn, err := upgrader.Upgrade(w, req, nil)
		if err != nil {
			return
		}
		c := &client{conn: conn, send: make(chan []byte, sendBuffer), token: newToken()}
		r.mu.Lock()
		r.waiting = append(r.waiting, c)
		r.sockets++
		msg, _ := json.Marshal(queued{Type: "queued", Token: c.token, Rank: len(r.waiting), Total: len(r.waiting)})
		r.mu.Unlock()
		c.send <- msg
		go c.writePump()
		go c.readPump(r)
	})
	go r.tick(*interval, *batch)
	log.Fatal(http.ListenAndServe(*addr, mux))
}

// tick admits the head of the line every interval, on the interval's boundaries, then sends every waiting
// socket its rank.
func (r *room) tick(interval time.Duration, batch int) {
	for {
		now := time.Now()
		time.Sleep(now.Truncate(interval).Add(interval).Sub(now))
		at := time.Now()
		r.mu.Lock()
		n := min(batch, len(r.waiting))
		head := slices.Clone(r.waiting[:n])
		r.waiting = slices.Delete(r.waiting, 0, n)
		line := slices.Clone(r.waiting)
		r.mu.Unlock()
		expires := at.Add(time.Hour).UTC().Format(time.RFC3339)
		for _, c := range head {
			msg, _ := json.Marshal(admitted{Type: "admitted", Token: c.token, Pass: "naive", ExpiresAt: expires})
			c.push(msg)
		}
		for i, c := range line {
			msg, _ := json.Marshal(position{Type: "position", Rank: i + 1, Total: len(line), TickAt: at.UnixMilli()})
			c.push(msg)
		}
	}
}

// push hands msg to the client's writer, dropping the client when its buffer is full (as the chat example
// does).
func (c *client) push(msg []byte) {
	select {
	case c.send <- msg:
	default:
		_ = c.conn.Close()
	}
}

func (c *client) readPump(r *room) {
	defer func() {
		r.mu.Lock()
		if i := slices.Index(r.waiting, c); i >= 0 {
			r.waiting = slices.Delete(r.waiting, i, i+1)
		}
		r.sockets--
		r.mu.Unlock()
		_ = c.conn.Close()
	}()
	c.conn.SetReadLimit(512)
	_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		if _, _, err := c.conn.ReadMessage(); err != nil {
			return
		}
	}
}

func (c *client) writePump() {
	ticker := time.NewTicker(pingPeriod)
	defer func() {
		ticker.Stop()
		_ = c.conn.Close()
	}()
	for {
		select {
		case msg := <-c.send:
			_ = c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		case <-ticker.C:
			_ = c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
