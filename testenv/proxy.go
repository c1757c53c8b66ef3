// Proxy: a TCP proxy between the server and a backend that cuts, resets or slows the network on demand.

package testenv

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxyBuffer is the most one forwarded chunk carries.
const proxyBuffer = 32 << 10

// Proxy is a TCP proxy a test puts between the server and a backend (Redis, PostgreSQL) to break the
// network on demand: Cut drops every connection with a reset and refuses new ones until Restore; Reset drops
// the current ones only; Delay slows every chunk. Its methods are safe for concurrent use, and it stops,
// with every goroutine it started, when the test ends.
type Proxy struct {
	target string
	ln     net.Listener
	delay  atomic.Int64 // nanoseconds added before each forwarded chunk

	ctx    context.Context // cancelled when the test ends
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	cut   bool
	conns map[*proxyConn]struct{}
}

// proxyConn is one client connection and its upstream one.
type proxyConn struct {
	client, upstream *net.TCPConn
	once             sync.Once // closes both, once: with a reset (abort) or cleanly
}

// abort closes both ends with a reset (SO_LINGER 0), as a broken network or a crashed peer would.
func (c *proxyConn) abort() {
	c.once.Do(func() {
		_ = c.client.SetLinger(0)
		_ = c.upstream.SetLinger(0)
		_ = c.client.Close()
		_ = c.upstream.Close()
	})
}

// NewProxy listens on a free loopback port and forwards every connection to target.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, ctx: ctx, cancel: cancel, conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the host:port to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut resets every current connection and, until Restore, resets every new one as soon as it is accepted:
// the backend is unreachable.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.Reset()
}

// Restore ends a Cut: new connections are forwarded again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Reset resets every current connection once; new ones are forwarded (unless the proxy is cut).
func (p *Proxy) Reset() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.abort()
	}
}

// Delay adds d before each chunk is forwarded, in either direction (0 removes it).
func (p *Proxy) Delay(d time.Duration) { p.delay.Store(int64(d)) }

// Conns is the number of connections being forwarded now.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func (p *Proxy) close() {
	p.cancel()
	_ = p.ln.Close()
	p.Reset()
	p.wg.Wait()
}

func (p *Proxy) cutNow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // a transient accept error (e.g. too many open files)
			continue
		}
		client := conn.(*net.TCPConn)
		if p.cutNow() {
			_ = client.SetLinger(0)
			_ = client.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve dials the target for client and forwards both ways until either side ends or the proxy resets them.
func (p *Proxy) serve(client *net.TCPConn) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: 5 * time.Second}
	up, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		_ = client.SetLinger(0)
		_ = client.Close()
		return
	}
	c := &proxyConn{client: client, upstream: up.(*net.TCPConn)}
	p.mu.Lock()
	if p.cut || p.ctx.Err() != nil { // cut (or closed) while dialling
		p.mu.Unlock()
		c.abort()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.pipe(c, c.upstream, c.client) }()
	go func() { defer both.Done(); p.pipe(c, c.client, c.upstream) }()
	both.Wait()
	c.once.Do(func() { // both sides ended cleanly
		_ = c.client.Close()
		_ = c.upstream.Close()
	})

	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pipe copies src to dst, a chunk at a time, each after the current delay. When src ends cleanly the end is
// passed on (a half close); any error resets both connections.
func (p *Proxy) pipe(c *proxyConn, dst, src *net.TCPConn) {
	buf := make([]byte, proxyBuffer)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); d > 0 {
				timer := time.NewTimer(d)
				select {
				case <-timer.C:
				case <-p.ctx.Done():
					timer.Stop()
					c.abort()
					return
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				c.abort()
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = dst.CloseWrite()
				return
			}
			c.abort()
			return
		}
	}
}
