// The source addresses users dial from (127.0.0.2 onwards, past the ~28,000 ports of one address), each with
// its socket dialer and its HTTP client.

package swarm

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
)

const (
	// maxSources bounds Config.Sources: the addresses run from 127.0.0.2 to 127.0.0.255.
	maxSources = 254
	// maxUsersPerSource bounds the users connected at once from one source address: a (source,
	// destination) pair has about 28,000 ephemeral ports (32768–60999), less room for REST calls.
	maxUsersPerSource = 25000
)

// source is one address users dial from: its dial for sockets and its HTTP client.
type source struct {
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	client *http.Client
}

// sourceAddrs returns the n loopback addresses users dial from, 127.0.0.2 onwards; none for n ≤ 1, which
// leaves the choice to the system as any dial does.
func sourceAddrs(n int) []net.IP {
	if n <= 1 {
		return nil
	}
	addrs := make([]net.IP, n)
	for i := range addrs {
		addrs[i] = net.IPv4(127, 0, 0, byte(2+i))
	}
	return addrs
}

// sourceOf is the source of the user numbered user (0-based, in the whole run) among n: users take the
// sources in turn, so each child process, holding a run of consecutive users, uses them all.
func sourceOf(user, n int) int {
	if n <= 1 {
		return 0
	}
	return user % n
}

// isLoopback reports whether host (no port) is a 127.0.0.0/8 address or localhost: only there do the
// 127.0.0.x source addresses reach the server.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() != nil && ip.IsLoopback()
}

// checkSources refuses source addresses for a server they cannot reach, and too few sources for the users
// connected at once.
func checkSources(host string, sources, concurrency int) []error {
	var errs []error
	switch {
	case sources > maxSources:
		errs = append(errs, fmt.Errorf("sources = %d, want at most %d (127.0.0.2 to 127.0.0.255)", sources, maxSources))
	case sources > 1 && !isLoopback(host):
		errs = append(errs, fmt.Errorf("sources = %d dials from 127.0.0.x, which reaches only a loopback server (127.0.0.0/8 or localhost), not %q", sources, host))
	}
	if perSource := ceilDiv(concurrency, max(sources, 1)); perSource > maxUsersPerSource {
		errs = append(errs, fmt.Errorf("%d users connected at once over %d source addresses is %d per address; one address has about 28,000 ports to a server: raise -sources to at least %d",
			concurrency, sources, perSource, ceilDiv(concurrency, maxUsersPerSource)))
	}
	return errs
}

// newSources builds one dialer and one HTTP client per address (one without an address when there are
// none), with keep-alive room for their share of the users connected at once.
func newSources(addrs []net.IP, concurrency int) []source {
	if len(addrs) == 0 {
		return []source{newSource(nil, concurrency)}
	}
	out := make([]source, len(addrs))
	for i, ip := range addrs {
		out[i] = newSource(ip, ceilDiv(concurrency, len(addrs)))
	}
	return out
}

func newSource(ip net.IP, users int) source {
	d := &net.Dialer{Timeout: handshakeTimeout}
	if ip != nil {
		d.LocalAddr = &net.TCPAddr{IP: ip} // port 0: the system picks, at connect time (bindNoPort)
		d.Control = bindNoPort
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = d.DialContext
	transport.MaxIdleConns = max(min(users, maxIdleConns), 1)
	transport.MaxIdleConnsPerHost = transport.MaxIdleConns
	return source{
		dial:   d.DialContext,
		client: &http.Client{Transport: transport, Timeout: requestTimeout},
	}
}

func ceilDiv(a, b int) int {
	return (a + b - 1) / b
}
