//go:build linux

// The reactor: one epoll set and one goroutine read every plain socket of a process.

package swarm

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// reactor reads all of a process's plain sockets: one epoll set, one goroutine, one read per ready socket
// (level-triggered, so what is left waits for the next round), and a buffer shared by all of them. A
// socket's own memory is only an unfinished frame, if any.
type reactor struct {
	epfd int
	wake int // an eventfd; written to stop the loop
	done chan struct{}

	// mu is held by the loop while it reads a round of ready sockets, and by a user releasing its socket:
	// so a descriptor is never closed (and reused by the next dial) while the loop reads it.
	mu    sync.Mutex
	socks map[uint64]*fdTransport
	buf   []byte // the one read buffer, used under mu
	next  uint64 // the last id given; 0 is the wake-up
}

// fdTransport is a socket's descriptor, a duplicate of the dialed connection's that Go's own poller does
// not watch (the original is closed), so that only the reactor waits on it.
type fdTransport struct {
	rx   *reactor
	fd   int
	id   uint64
	sock *socket
	// polled: in the epoll set (under rx.mu). closed: the descriptor is closed (the user's goroutine).
	polled, closed bool
}

// readRound bounds the sockets one wait returns; readBuffer is the reactor's one read buffer.
const (
	readRound  = 512
	readBuffer = 64 << 10
)

var useReactor = true // tests turn it off to run the goroutine-per-socket reader

// newReactor starts a reactor; nil (and no error) when useReactor is off.
func newReactor() (*reactor, error) {
	if !useReactor {
		return nil, nil
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	r := &reactor{epfd: epfd, wake: wake, done: make(chan struct{}), socks: map[uint64]*fdTransport{}, buf: make([]byte, readBuffer)}
	go r.loop()
	return r, nil
}

// add takes over conn for k: its descriptor moves to the reactor, rest (bytes read past the handshake) is
// read first. A connection that is not TCP gets a reading goroutine of its own.
func (r *reactor) add(k *socket, conn net.Conn, rest []byte) error {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		startConnReader(k, conn, rest)
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return err
	}
	if derr != nil {
		return os.NewSyscallError("fcntl", derr)
	}
	// Closing the original takes it out of Go's poller; the connection lives on in fd (the socket is shut
	// only when its last descriptor closes). It stays non-blocking: the flag belongs to the connection.
	_ = conn.Close()
	t := &fdTransport{rx: r, fd: fd, sock: k}
	k.t = t
	if len(rest) > 0 && !k.consume(rest, time.Now()) {
		return nil // the server ended it at once; the user reads why, then closes fd
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	t.id = r.next
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(uint32(t.id)), Pad: int32(uint32(t.id >> 32))}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		t.closed = true
		return os.NewSyscallError("epoll_ctl", err)
	}
	t.polled = true
	r.socks[t.id] = t
	return nil
}

func (r *reactor) loop() {
	defer close(r.done)
	events := make([]unix.EpollEvent, readRound)
	for {
		n, err := unix.EpollWait(r.epfd, events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			r.fail(os.NewSyscallError("epoll_wait", err))
			return
		}
		r.mu.Lock()
		for _, ev := range events[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if id == 0 {
				r.mu.Unlock()
				return
			}
			if t := r.socks[id]; t != nil {
				r.readable(t)
			}
		}
		r.mu.Unlock()
	}
}

// readable reads t once (under r.mu); it reports whether the read filled the buffer (more may be there).
func (r *reactor) readable(t *fdTransport) bool {
	n, err := unix.Read(t.fd, r.buf)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return false
	case err != nil:
		t.sock.stop(os.NewSyscallError("read", err))
	case n == 0:
		t.sock.stop(io.ErrUnexpectedEOF)
	case t.sock.consume(r.buf[:n], time.Now()):
		return n == len(r.buf)
	}
	r.unpoll(t)
	return false
}

// unpoll takes t out of the epoll set (under r.mu); its descriptor stays open until the user closes it.
func (r *reactor) unpoll(t *fdTransport) {
	if t.polled {
		_ = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, t.fd, nil)
		t.polled = false
	}
	delete(r.socks, t.id)
}

// fail stops every socket's reading with err (the epoll set itself failed).
func (r *reactor) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.socks {
		t.sock.stop(err)
		r.unpoll(t)
	}
}

// close stops the loop and releases the epoll set. The users have released their sockets by then; any left
// are closed here.
func (r *reactor) close() {
	if r == nil {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(r.wake, one[:])
	<-r.done
	r.mu.Lock()
	for _, t := range r.socks {
		r.unpoll(t)
		unix.Close(t.fd)
		t.closed = true
	}
	r.mu.Unlock()
	unix.Close(r.epfd)
	unix.Close(r.wake)
}

// write writes b whole, waiting for room until deadline.
func (t *fdTransport) write(b []byte, deadline time.Time) error {
	if t.closed {
		return net.ErrClosed
	}
	for len(b) > 0 {
		n, err := unix.SendmsgN(t.fd, b, nil, nil, unix.MSG_NOSIGNAL)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			wait := time.Until(deadline)
			if wait <= 0 {
				return os.ErrDeadlineExceeded
			}
			_, _ = unix.Poll([]unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLOUT}}, int(wait/time.Millisecond)+1)
			continue
		case err != nil:
			return os.NewSyscallError("sendmsg", err)
		}
		b = b[n:]
	}
	return nil
}

// close releases the descriptor, out of the loop's way. What has arrived and the loop has not read yet is
// read first: a message the kernel held before the close was received, even when the loop ran late.
func (t *fdTransport) close() {
	r := t.rx
	r.mu.Lock()
	defer r.mu.Unlock()
	for t.polled && r.readable(t) {
	}
	r.unpoll(t)
	if !t.closed {
		unix.Close(t.fd)
		t.closed = true
	}
}
