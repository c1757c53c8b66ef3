//go:build !linux

// No reactor where there is no epoll: every socket gets a reading goroutine of its own (connreader.go).

package swarm

import "net"

// reactor is Linux's (reactor_linux.go); elsewhere every socket has a reading goroutine of its own.
type reactor struct{}

var useReactor = false

func newReactor() (*reactor, error) { return nil, nil }

func (r *reactor) add(k *socket, conn net.Conn, rest []byte) error {
	startConnReader(k, conn, rest)
	return nil
}

func (r *reactor) close() {}
