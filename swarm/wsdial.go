// Opening a user's socket: dial ws or wss from the user's source address, run the RFC 6455 opening handshake,
// and hand the connection to its reader.

package swarm

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// websocketGUID is the handshake's constant (RFC 6455 §1.3).
const websocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// dialSocket dials u (ws or wss) with dial, runs the opening handshake and hands the socket to rx for
// reading, or to a goroutine of its own when rx is nil or the connection is TLS.
func dialSocket(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), rx *reactor, u string) (*socket, error) {
	target, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	secure := target.Scheme == "wss"
	if !secure && target.Scheme != "ws" {
		return nil, fmt.Errorf("socket URL %q: want ws or wss", u)
	}
	host := target.Host
	if target.Port() == "" {
		if secure {
			host = net.JoinHostPort(target.Hostname(), "443")
		} else {
			host = net.JoinHostPort(target.Hostname(), "80")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	conn, err := dial(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	if secure {
		tc := tls.Client(conn, &tls.Config{ServerName: target.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	rest, err := handshake(ctx, conn, target)
	if err != nil {
		conn.Close()
		return nil, err
	}
	sock := newSocket()
	if rx != nil { // a TLS connection is no *net.TCPConn: add gives it a reading goroutine
		if err := rx.add(sock, conn, rest); err != nil {
			conn.Close()
			return nil, err
		}
		return sock, nil
	}
	startConnReader(sock, conn, rest)
	return sock, nil
}

// handshake sends the opening request on conn and reads the answer. It returns the bytes read past the
// answer (the server's first frames may come with it), or a *handshakeError for any status but 101.
func handshake(ctx context.Context, conn net.Conn, target *url.URL) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var k [16]byte
	for i := range k {
		k[i] = byte(rand.Uint32())
	}
	key := base64.StdEncoding.EncodeToString(k[:])
	req := "GET " + target.RequestURI() + " HTTP/1.1\r\nHost: " + target.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		return nil, ctxErr(ctx, err)
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet, URL: target})
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		return nil, &handshakeError{status: resp.StatusCode}
	}
	sum := sha1.Sum([]byte(key + websocketGUID))
	switch {
	case !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket"):
		return nil, fmt.Errorf("%w: handshake answer without Upgrade: websocket", errProtocol)
	case resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]):
		return nil, fmt.Errorf("%w: handshake answer with a wrong Sec-WebSocket-Accept", errProtocol)
	}
	rest, _ := br.Peek(br.Buffered())
	_ = conn.SetDeadline(time.Time{})
	return append([]byte(nil), rest...), nil
}

// ctxErr prefers the context's end to the error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

// handshakeError is a socket the server refused with an HTTP status: not worth dialing again.
type handshakeError struct{ status int }

func (e *handshakeError) Error() string {
	return fmt.Sprintf("websocket handshake refused: HTTP %d", e.status)
}
