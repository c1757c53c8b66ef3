// Tests of the WebSocket client: the frame reader in any chunking and against what a server may not send,
// pings, masked frames, handshakes, closes, and the reactor with many sockets.

package swarm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// serverFrame is a frame as a server sends it: unmasked, with the length in the shortest form.
func serverFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	b := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// TestFrameReaderInAnyChunking feeds one server stream to the frame reader cut into pieces of every size
// from 1 byte up: a message arrives however the kernel splits it.
func TestFrameReaderInAnyChunking(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_500)
	pass := strings.Repeat("p", 300) // a 16-bit length
	admitted := fmt.Sprintf(`{"type":"admitted","token":"t1","pass":%q}`, pass)
	var stream []byte
	stream = append(stream, serverFrame(true, opText, []byte(`{"type":"queued","token":"t1","rank":3,"total":9}`))...)
	stream = append(stream, serverFrame(true, opText, []byte(`{"type":"position","rank":3,"total":9,"tick_at":1700000000400}`))...)
	stream = append(stream, serverFrame(true, opPing, []byte("hi"))...)
	stream = append(stream, serverFrame(true, opText, []byte(`{"type":"position","rank":2,"total":9,"tick_at":1700000000450,"eta_seconds":4}`))...)
	stream = append(stream, serverFrame(true, opText, []byte(`{"type":"position","rank":2,"total":9,"tick_at":1700000000480,"catch_up":true}`))...)
	// A fragmented message with a ping between its fragments (RFC 6455 §5.4).
	stream = append(stream, serverFrame(false, opText, []byte(admitted[:10]))...)
	stream = append(stream, serverFrame(true, opPing, nil)...)
	stream = append(stream, serverFrame(false, opContinuation, []byte(admitted[10:200]))...)
	stream = append(stream, serverFrame(true, opContinuation, []byte(admitted[200:]))...)
	stream = append(stream, serverFrame(true, opPong, []byte("x"))...)
	stream = append(stream, serverFrame(true, opClose, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "draining"))...)
	stream = append(stream, serverFrame(true, opText, []byte(`{"type":"after close"}`))...)

	for size := 1; size <= len(stream); size++ {
		k := newSocket()
		for i := 0; i < len(stream); i += size {
			if !k.consume(stream[i:min(i+size, len(stream))], at) {
				break
			}
		}
		var types []string
		var pings []string
		var last error
		for e, ok := k.take(); ok; e, ok = k.take() {
			switch {
			case e.err != nil:
				last = e.err
			case e.ping:
				pings = append(pings, string(e.data))
			default:
				types = append(types, e.msg.Type)
				if e.msg.Type == "admitted" && e.msg.Pass != pass {
					t.Fatalf("chunks of %d: the pass is %d bytes, want the %d sent", size, len(e.msg.Pass), len(pass))
				}
			}
		}
		if !slices.Equal(types, []string{"queued", "admitted"}) || !slices.Equal(pings, []string{"hi", ""}) {
			t.Fatalf("chunks of %d: messages %q, pings %q; want queued and admitted, pings \"hi\" and \"\"", size, types, pings)
		}
		var ce *websocket.CloseError
		if !errors.As(last, &ce) || ce.Code != websocket.CloseServiceRestart || ce.Text != "draining" {
			t.Fatalf("chunks of %d: the end is %v, want close 1012 draining", size, last)
		}
		got := k.takePositions()
		want := []position{
			{TickAtMs: 1700000000400, Latency: 100 * time.Millisecond, AfterQueued: true},
			{TickAtMs: 1700000000450, Latency: 50 * time.Millisecond},
			{TickAtMs: 1700000000480, Latency: 20 * time.Millisecond, CatchUp: true},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("chunks of %d: positions %+v, want %+v", size, got, want)
		}
	}
}

func TestFrameReaderRefusesWhatTheServerMayNotSend(t *testing.T) {
	masked := serverFrame(true, opText, []byte(`{}`))
	masked[1] |= 0x80
	reserved := serverFrame(true, opText, []byte(`{}`))
	reserved[0] |= 0x40
	for name, stream := range map[string][]byte{
		"a masked frame":                   masked,
		"reserved bits":                    reserved,
		"an unknown opcode":                serverFrame(true, 0x3, nil),
		"a fragmented control frame":       serverFrame(false, opPing, nil),
		"a control frame over 125 bytes":   serverFrame(true, opPing, make([]byte, 126)),
		"a frame over the message size":    serverFrame(true, opText, make([]byte, maxMessageSize+1)),
		"a continuation outside a message": serverFrame(true, opContinuation, []byte(`{}`)),
		"a message inside a fragmented one": append(serverFrame(false, opText, []byte(`{"ty`)),
			serverFrame(true, opText, []byte(`{}`))...),
		"a fragmented message over the size": append(serverFrame(false, opText, make([]byte, maxMessageSize)),
			serverFrame(true, opContinuation, []byte("x"))...),
		"a message that is not JSON": serverFrame(true, opText, []byte(`not json`)),
		"a close frame of 1 byte":    serverFrame(true, opClose, []byte{3}),
	} {
		k := newSocket()
		if k.consume(stream, time.Now()) {
			t.Errorf("%s: the reader goes on", name)
			continue
		}
		e, ok := k.take()
		if !ok || !errors.Is(e.err, errProtocol) {
			t.Errorf("%s: the end is %+v, want a protocol error", name, e)
		}
		if k.consume(serverFrame(true, opText, []byte(`{"type":"queued"}`)), time.Now()) {
			t.Errorf("%s: the reader reads on after its end", name)
		}
		if _, more := k.take(); more {
			t.Errorf("%s: an event after the end", name)
		}
	}
	// A close frame without a code is 1005, as gorilla says it.
	k := newSocket()
	k.consume(serverFrame(true, opClose, nil), time.Now())
	var ce *websocket.CloseError
	if e, _ := k.take(); !errors.As(e.err, &ce) || ce.Code != websocket.CloseNoStatusReceived {
		t.Errorf("an empty close frame ends with %v, want close 1005", e.err)
	}
}

// socketServer upgrades one socket at a time with gorilla and hands it to play.
func socketServer(t *testing.T, play func(conn *websocket.Conn)) string {
	t.Helper()
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("refuse") != "" {
			http.Error(w, "busy", http.StatusTooManyRequests)
			return
		}
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer conn.Close()
		play(conn)
	}))
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// bothReaders runs f with the reactor and with a reading goroutine per socket.
func bothReaders(t *testing.T, f func(t *testing.T, rx *reactor)) {
	t.Run("reactor", func(t *testing.T) {
		rx, err := newReactor()
		if err != nil {
			t.Fatal(err)
		}
		if rx == nil && useReactor {
			t.Fatal("no reactor")
		}
		defer rx.close()
		f(t, rx)
	})
	t.Run("goroutine", func(t *testing.T) { f(t, nil) })
}

func TestSocketAnswersPingsAndWritesMaskedFrames(t *testing.T) {
	bothReaders(t, func(t *testing.T, rx *reactor) {
		pongs := make(chan string, 1)
		got := make(chan []string, 1)
		u := socketServer(t, func(conn *websocket.Conn) {
			conn.SetPongHandler(func(data string) error {
				pongs <- data
				return conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"paused"}`))
			})
			_ = conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"queued","token":"t1"}`))
			_ = conn.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(time.Second))
			var in []string
			for {
				// gorilla refuses an unmasked frame from a client: reading at all checks the masking.
				_, data, err := conn.ReadMessage()
				if err != nil {
					var ce *websocket.CloseError
					if errors.As(err, &ce) {
						in = append(in, fmt.Sprintf("close %d", ce.Code))
					}
					got <- in
					return
				}
				in = append(in, string(data))
			}
		})
		k, err := dialSocket(context.Background(), (&netDialer).DialContext, rx, u+"/ws")
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := k.read(context.Background(), nil, 5*time.Second)
		if err != nil || m.Type != "queued" || m.Token != "t1" {
			t.Fatalf("first message %+v, %v; want queued t1", m, err)
		}
		// The ping comes next: read answers it, and the server's answer to the pong is the next message.
		m, _, err = k.read(context.Background(), nil, 5*time.Second)
		if err != nil || m.Type != "paused" {
			t.Fatalf("after the ping: %+v, %v; want paused, sent once the pong arrived", m, err)
		}
		if p := <-pongs; p != "are you there" {
			t.Errorf("pong %q, want the ping's payload", p)
		}
		k.leave()
		k.close()
		if in := <-got; !slices.Equal(in, []string{`{"type":"leave"}`, "close 1000"}) {
			t.Errorf("the server read %q, want the leave and a close 1000", in)
		}
	})
}

// A ping is answered by the reader as it arrives, while the user is busy elsewhere and reads nothing (a
// reservation, a checkout): the server, which drops a socket that leaves its pings unanswered, keeps it.
func TestSocketAnswersPingsWhileItsUserIsNotReading(t *testing.T) {
	bothReaders(t, func(t *testing.T, rx *reactor) {
		pongs := make(chan string, 1)
		u := socketServer(t, func(conn *websocket.Conn) {
			conn.SetPongHandler(func(data string) error {
				pongs <- data
				return nil
			})
			_ = conn.WriteControl(websocket.PingMessage, []byte("still there?"), time.Now().Add(time.Second))
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
			}
		})
		k, err := dialSocket(context.Background(), (&netDialer).DialContext, rx, u+"/ws")
		if err != nil {
			t.Fatal(err)
		}
		defer k.close()
		select { // nobody calls k.read
		case p := <-pongs:
			if p != "still there?" {
				t.Errorf("pong %q, want the ping's payload", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no pong while the user was not reading")
		}
	})
}

func TestSocketDialRefusedOrWrongHandshake(t *testing.T) {
	bothReaders(t, func(t *testing.T, rx *reactor) {
		u := socketServer(t, func(*websocket.Conn) {})
		_, err := dialSocket(context.Background(), (&netDialer).DialContext, rx, u+"/ws?refuse=1")
		var hs *handshakeError
		if !errors.As(err, &hs) || hs.status != http.StatusTooManyRequests {
			t.Errorf("a refused dial: %v, want handshake 429", err)
		}
		plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Upgrade", "websocket")
			w.Header().Set("Connection", "Upgrade")
			w.Header().Set("Sec-WebSocket-Accept", "wrong")
			w.WriteHeader(http.StatusSwitchingProtocols)
		}))
		defer plain.Close()
		_, err = dialSocket(context.Background(), (&netDialer).DialContext, rx, "ws"+strings.TrimPrefix(plain.URL, "http")+"/ws")
		if !errors.Is(err, errProtocol) {
			t.Errorf("a wrong accept key: %v, want a protocol error", err)
		}
	})
}

// TestSocketEndsOnTheServersClose: the close frame's code reaches the user; the server's first messages,
// sent with the handshake's answer, are not lost.
func TestSocketEndsOnTheServersClose(t *testing.T) {
	bothReaders(t, func(t *testing.T, rx *reactor) {
		u := socketServer(t, func(conn *websocket.Conn) {
			for i := range 3 {
				_ = conn.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"position","rank":%d,"total":3,"tick_at":1}`, 3-i))
			}
			_ = conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"error","code":"UNAVAILABLE"}`))
			_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "UNAVAILABLE"))
		})
		k, err := dialSocket(context.Background(), (&netDialer).DialContext, rx, u+"/ws")
		if err != nil {
			t.Fatal(err)
		}
		defer k.drop()
		m, _, err := k.read(context.Background(), nil, 5*time.Second)
		if err != nil || m.Type != "error" || m.Code != "UNAVAILABLE" {
			t.Fatalf("first message %+v, %v; want the error", m, err)
		}
		_, _, err = k.read(context.Background(), nil, 5*time.Second)
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
			t.Fatalf("then %v, want close 1013", err)
		}
		if p := k.takePositions(); len(p) != 3 {
			t.Errorf("%d positions recorded, want 3", len(p))
		}
	})
}

// TestHoldWithAReadingGoroutinePerSocket runs the hold of TestHoldMeasuresEveryPushAndMissesNone without
// the reactor (a wss URL, or not Linux).
func TestHoldWithAReadingGoroutinePerSocket(t *testing.T) {
	if !useReactor {
		t.Skip("already without a reactor")
	}
	useReactor = false
	defer func() { useReactor = true }()
	rep, _ := holdRun(t, false, false)
	if rep.Push.Positions.Count != 12 || rep.Push.MissedTicks != 0 {
		t.Errorf("positions %d, missed %d; want 12, none missed", rep.Push.Positions.Count, rep.Push.MissedTicks)
	}
}

// TestReactorHoldsManySockets: 300 users in line mode, each told 5 positions, every one of them in two
// frames (a fragmented message).
func TestReactorHoldsManySockets(t *testing.T) {
	const users = 300
	tk := ticks{start: time.Now().Add(1500 * time.Millisecond), every: 100 * time.Millisecond, n: 5}
	f := &fake{
		// A write buffer smaller than a position: gorilla sends it as a fragmented message.
		upgrader: websocket.Upgrader{WriteBufferSize: 32},
		onSocket: func(n int, token string, conn *websocket.Conn) {
			send(t, conn, map[string]any{"type": "queued", "token": fmt.Sprintf("%032x", n+1), "rank": n + 1, "total": users})
			for k := 1; k <= tk.n; k++ {
				time.Sleep(time.Until(tk.at(k)))
				w, err := conn.NextWriter(websocket.TextMessage)
				if err != nil {
					return
				}
				_, _ = fmt.Fprintf(w, `{"type":"position","rank":%d,"total":%d,"tick_at":%d}`, n+1, users, tk.at(k).UnixMilli())
				_ = w.Close()
			}
		},
		onReserve: func(int, []string) (int, any) { return http.StatusInternalServerError, nil },
	}
	url := newFake(t, f)
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: users, Mode: Line, Duration: 2500 * time.Millisecond, Timeout: 20 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Held: users}) || rep.Reconnects != 0 {
		t.Fatalf("outcomes %+v, reconnects %d; want %d held (errors %v)", rep.Outcomes, rep.Reconnects, users, rep.Errors)
	}
	if rep.Push.Positions.Count != users*tk.n || rep.Push.Ticks != tk.n || rep.Push.MissedTicks != 0 || rep.Push.UsersWithEveryTick != users {
		t.Errorf("positions %d in %d ticks, missed %d, users with every tick %d; want %d in %d, none missed, all %d",
			rep.Push.Positions.Count, rep.Push.Ticks, rep.Push.MissedTicks, rep.Push.UsersWithEveryTick, users*tk.n, tk.n, users)
	}
}

var netDialer net.Dialer
