package hub

import "time"

// SetFlushTimeout shortens how long the writers' watchdog lets one flush run (writeWait otherwise).
func SetFlushTimeout(h *Hub, d time.Duration) { h.writers.timeout = d }

// SetTrim sets how often h looks at its sockets' churn and the churn that makes a burst (trim.go). It must
// be called before the first socket joins.
func SetTrim(h *Hub, every time.Duration, burst int) { h.trimEvery, h.trimBurst = every, burst }

// SetPingPeriod sets how often h pings each socket (pingPeriod otherwise). It must be called before the
// first socket joins.
func SetPingPeriod(h *Hub, d time.Duration) { h.pingEvery = d }

// PingSliceSizes counts h's sockets in each of the pinger's slices.
func PingSliceSizes(h *Hub) []int {
	sizes := make([]int, pingSlices)
	for i := range sizes {
		sizes[i] = len(h.appendSlice(nil, i))
	}
	return sizes
}
