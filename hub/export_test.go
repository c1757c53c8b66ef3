package hub

import "time"

// SetFlushTimeout shortens how long the writers' watchdog lets one flush run (writeWait otherwise).
func SetFlushTimeout(h *Hub, d time.Duration) { h.writers.timeout = d }
