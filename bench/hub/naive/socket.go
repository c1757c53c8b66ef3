// The screening's socket: the hello (or the token in the URL), the first message, the client's leave, and
// the gorilla chat example's two pumps.

package main

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// The server's messages (docs/protocol.md 4.2), their fields in the real server's order: the swarm reads a
// position's tick_at last.
type position struct {
	Type   string `json:"type"`
	Rank   int    `json:"rank"`
	Total  int    `json:"total"`
	TickAt int64  `json:"tick_at"`
}

type queued struct {
	Type     string `json:"type"`
	Token    string `json:"token"`
	Rank     int    `json:"rank"`
	Total    int    `json:"total"`
	Inserted bool   `json:"inserted"`
}

type prequeued struct {
	Type     string `json:"type"`
	Token    string `json:"token"`
	OpensAt  string `json:"opens_at"`
	Total    int    `json:"total"`
	Inserted bool   `json:"inserted"`
}

type admittedMsg struct {
	Type      string `json:"type"`
	Token     string `json:"token"`
	Pass      string `json:"pass"`
	ExpiresAt string `json:"expires_at"`
}

type errorMsg struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

var soldOutMessage = frame{data: []byte(`{"type":"sold_out","reason":"sold_out"}`)}

func (m *member) admittedMessage() frame {
	msg, _ := json.Marshal(admittedMsg{Type: "admitted", Token: m.token, Pass: m.pass, ExpiresAt: wireTime(m.expiresAt)})
	return frame{data: msg}
}

// frame is one message for a client's writer: a text message, or (closing) a close frame's payload, after
// which the writer ends the connection.
type frame struct {
	data    []byte
	closing bool
}

func closeFrame(code int, reason string) frame {
	return frame{data: websocket.FormatCloseMessage(code, reason), closing: true}
}

type client struct {
	conn *websocket.Conn
	send chan frame
	// done is closed when the reader stops; the writer stops with it.
	done chan struct{}
}

// socket upgrades, reads the hello when asked to (auth=message), registers the token, and leaves the
// socket to its two pumps, as the chat example does. A refusal is an error message and a close 1008, as
// the real server's.
func (s *server) socket(w http.ResponseWriter, req *http.Request) {
	conn, err := s.upgrader.Upgrade(w, req, nil)
	if err != nil {
		return // the upgrader answered
	}
	s.sockets.Add(1)
	c := &client{conn: conn, send: make(chan frame, sendBuffer), done: make(chan struct{})}
	go c.writePump()
	r := s.room(req.PathValue("id"))
	token, ok := "", false
	if r == nil {
		c.refuse("UNKNOWN_SCREENING", "no such screening")
	} else {
		token, ok = c.token(req)
	}
	if ok && r.join(c, token) {
		c.soldOut()
		ok = false
	}
	if !ok {
		r = nil // refused or told sold out: only the close is awaited
	}
	go c.readPump(s, r)
}

// token is the socket's token: the hello's with auth=message, else the URL's; "" asks for a new place. A
// refused hello or token is answered here (ok false).
func (c *client) token(req *http.Request) (token string, ok bool) {
	q := req.URL.Query()
	auth, withAuth := q["auth"]
	if !withAuth {
		token = q.Get("token")
	} else {
		if len(auth) != 1 || auth[0] != "message" || q.Has("token") {
			c.refuse("BAD_HELLO", "with auth=message the first message is the hello, and the URL has no token")
			return "", false
		}
		c.conn.SetReadLimit(maxHelloSize)
		_ = c.conn.SetReadDeadline(time.Now().Add(helloWait))
		var hello struct {
			Type  string `json:"type"`
			Token string `json:"token"`
		}
		kind, data, err := c.conn.ReadMessage()
		if err != nil {
			return "", false
		}
		if kind != websocket.TextMessage || json.Unmarshal(data, &hello) != nil || hello.Type != "hello" {
			c.refuse("BAD_HELLO", `with auth=message the first message is {"type":"hello","token":"<your token>"}, or {"type":"hello"} for a new place`)
			return "", false
		}
		token = hello.Token
	}
	if token != "" && !tokenRe.MatchString(token) {
		c.refuse("BAD_TOKEN", "a token is 32 lowercase hex digits; connect without one to get a new place")
		return "", false
	}
	return token, true
}

// refuse sends an error message, then a close 1008 with the code as its reason.
func (c *client) refuse(code, message string) {
	msg, _ := json.Marshal(errorMsg{Type: "error", Code: code, Message: message})
	c.push(frame{data: msg})
	c.push(closeFrame(websocket.ClosePolicyViolation, code))
}

// soldOut tells the client the sale is over, then closes its socket.
func (c *client) soldOut() {
	c.push(soldOutMessage)
	c.push(closeFrame(websocket.CloseNormalClosure, "sold out"))
}

// push hands f to the client's writer, dropping the client when its buffer is full (as the chat example
// does).
func (c *client) push(f frame) {
	select {
	case c.send <- f:
	default:
		_ = c.conn.Close()
	}
}

// readPump reads the client's frames until the connection ends: a leave takes the token out of r (nil:
// the socket was refused, and only its close is awaited), and the server closes the socket after it.
func (c *client) readPump(s *server, r *room) {
	defer func() {
		if r != nil {
			r.disconnect(c)
		}
		close(c.done)
		_ = c.conn.Close()
		s.sockets.Add(-1)
	}()
	c.conn.SetReadLimit(maxMessageSize)
	_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		var m struct {
			Type string `json:"type"`
		}
		if r != nil && json.Unmarshal(data, &m) == nil && m.Type == "leave" {
			r.leave(c)
			c.push(closeFrame(websocket.CloseNormalClosure, "left"))
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
		case f := <-c.send:
			_ = c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if f.closing {
				// The client answers with its close frame, which ends the reader; closing before it has
				// read this one could reset the connection under the messages before it.
				_ = c.conn.WriteMessage(websocket.CloseMessage, f.data)
				select {
				case <-c.done:
				case <-time.After(writeWait):
				}
				return
			}
			if err := c.conn.WriteMessage(websocket.TextMessage, f.data); err != nil {
				return
			}
		case <-ticker.C:
			_ = c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		case <-c.done:
			return
		}
	}
}
