// What the gate's external tests reach inside it.

package gate

import "time"

// SetClock sets the gate's clock (its read deadlines, rooms' ages, paces and cookies' checks).
func (g *Gate) SetClock(now func() time.Time) { g.now = now }

// RoomTTL is how long the gate keeps a room's mode, settings and (on its own cache) entry rules.
const RoomTTL = roomTTL
