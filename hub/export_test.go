package hub

import "time"

// SetFlushTimeout shortens how long the writers' watchdog lets one flush run (writeWait otherwise).
func SetFlushTimeout(h *Hub, d time.Duration) { h.writers.timeout = d }

// SetTrim sets how often h looks at its sockets' churn and the churn that makes a burst (trim.go). It must
// be called before the first socket joins.
func SetTrim(h *Hub, every time.Duration, burst int) { h.trimEvery, h.trimBurst = every, burst }
