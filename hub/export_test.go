package hub

import (
	"time"

	"github.com/gorilla/websocket"
)

// Client is a socket of the hub, for the tests that drive one by hand.
type Client = client

// SetFlushTimeout shortens how long the writers' watchdog lets one flush run (writeWait otherwise). It must
// be called before Run.
func SetFlushTimeout(h *Hub, d time.Duration) { h.writers.timeout = d }

// SetTrim sets how often h looks at its sockets' churn and the churn that makes a burst (trim.go). It must
// be called before Run.
func SetTrim(h *Hub, every time.Duration, burst int) { h.trimEvery, h.trimBurst = every, burst }

// TakeTrimLooks makes the test take each of h's trimmer's looks: a send on the returned channel is one
// look, and look waits for it to end (trim.go). It must be called before Run.
func TakeTrimLooks(h *Hub) (look func()) {
	looks, looked := make(chan time.Time), make(chan struct{})
	h.trimLooks, h.trimLooked = looks, func() { looked <- struct{}{} }
	return func() {
		looks <- time.Now()
		<-looked
	}
}

// TakePingSteps makes the test take each of h's pinger's steps: step(d) is a step at d after the pinger
// started, back once the pinger has received it (the pings it queues reach the sockets after). It must be
// called before Run.
func TakePingSteps(h *Hub) (step func(time.Duration)) {
	steps := make(chan time.Duration)
	h.pingSteps = steps
	return func(d time.Duration) { steps <- d }
}

// Churn counts the sockets that joined or left h, as its trimmer sees them.
func Churn(h *Hub) int64 { return h.churn.Load() }

// SetPingPeriod sets how often h pings each socket (pingPeriod otherwise). It must be called before Run.
func SetPingPeriod(h *Hub, d time.Duration) { h.pingEvery = d }

// SetHelloWait sets how long h waits for a socket's hello (helloWait otherwise). It must be called before
// any socket arrives.
func SetHelloWait(h *Hub, d time.Duration) { h.helloWait = d }

// HellosWaiting counts the sockets h holds while they wait for their hello.
func HellosWaiting(h *Hub) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.hellos)
}

// PingSliceSizes counts h's sockets in each of the pinger's slices.
func PingSliceSizes(h *Hub) []int {
	sizes := make([]int, pingSlices)
	for i := range sizes {
		sizes[i] = len(h.appendSlice(nil, i))
	}
	return sizes
}

// Join adds conn to h as Welcome does once the token is registered (join); nil when h is draining.
func Join(h *Hub, conn *websocket.Conn, screening, token string, seq int64, paused bool, first []byte) *Client {
	return h.join(conn, screening, token, seq, 0, paused, first)
}

// Serve reads c until its socket closes, on the caller's goroutine (Welcome serves on one of its own).
func Serve(h *Hub, c *Client) { h.serve(c, func() {}) }

// Send queues msg for c.
func Send(c *Client, msg []byte) bool { return c.send(msg) }

// Mark, SendUnlessTicked and Missed are the catch-up's steps (catchUp).
func Mark(c *Client) uint64 { return c.mark() }

func SendUnlessTicked(c *Client, mark uint64, msg []byte) bool { return c.sendUnlessTicked(mark, msg) }

func Missed(h *Hub, c *Client, epoch int64) bool { return h.missed(c, epoch) }

// SetRankClock puts h's rank pace (rankpace.go) on a test's clock: now tells the time, and after stands in
// for time.AfterFunc, so the test runs a scheduled push itself. It must be called before Run.
func SetRankClock(h *Hub, now func() time.Time, after func(time.Duration, func())) {
	h.clock, h.afterFunc = now, after
}
