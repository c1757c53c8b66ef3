// The reader where there is no reactor (a TLS connection, or not Linux): a goroutine per socket feeds the
// connection's bytes to the frame reader.

package swarm

import (
	"net"
	"time"
)

// connTransport reads a net.Conn with a goroutine of its own: for a TLS connection, and where there is no
// reactor.
type connTransport struct {
	conn    net.Conn
	stopped chan struct{} // closed when the reading goroutine has returned
}

func startConnReader(k *socket, conn net.Conn, rest []byte) {
	t := &connTransport{conn: conn, stopped: make(chan struct{})}
	k.t = t
	go func() {
		defer close(t.stopped)
		if len(rest) > 0 && !k.consume(rest, time.Now()) {
			return
		}
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if n > 0 && !k.consume(buf[:n], time.Now()) {
				return
			}
			if err != nil {
				k.stop(err)
				return
			}
		}
	}()
}

func (t *connTransport) write(b []byte, deadline time.Time) error {
	_ = t.conn.SetWriteDeadline(deadline)
	_, err := t.conn.Write(b)
	return err
}

func (t *connTransport) close() {
	_ = t.conn.Close()
	<-t.stopped
}
