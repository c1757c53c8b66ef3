// Package overload owns the classes of work and who is served first when the server is saturated: the
// payment backend's confirm and a buyer's cancel first, then the admitted buyers' reservations and seat-map
// reads, then the arriving sockets, then what only watches (the control room, the sweeps that can wait). A
// request says its class in its context (With); a Gate in front of a shared resource (the database pool)
// serves waiting requests in class order and keeps room for the classes above, so that a lower class never
// delays a higher one (docs/operations.md, "Classes of work").
//
// Files: overload.go (the classes), gate.go (the priority gate), metrics.go.
package overload

import (
	"context"
	"errors"
)

// Class is a class of work; a lower number is served first.
type Class int

// The classes, first served first.
const (
	// Payment is the payment backend's confirm and a buyer's cancel: a hold lapses while they wait.
	Payment Class = iota + 1
	// Buyer is an admitted buyer's reservation and seat-map reads, and anything that says no class.
	Buyer
	// Arrival is a new socket: its upgrade, hello, entry checks and registration.
	Arrival
	// Background is what only watches or can wait: the control room's stream, exports, metrics.
	Background
)

// Classes lists the classes, first served first.
var Classes = []Class{Payment, Buyer, Arrival, Background}

// numClasses sizes the arrays indexed by Class (index 0 unused).
const numClasses = int(Background) + 1

var names = [numClasses]string{"", "payment", "buyer", "arrival", "background"}

// String is the class's name, as /metrics labels it.
func (c Class) String() string {
	if c < Payment || c > Background {
		return "unknown"
	}
	return names[c]
}

// ErrBusy is a request that waited as long as its class may for a resource and was not served: the caller
// answers it "retry shortly" (503 with Retry-After, close 1013), having changed nothing.
var ErrBusy = errors.New("overload: busy; retry shortly")

type classKey struct{}

// With returns ctx marked as work of class c.
func With(ctx context.Context, c Class) context.Context {
	return context.WithValue(ctx, classKey{}, c)
}

// Of is the class ctx was marked with (With); Buyer when it was not.
func Of(ctx context.Context) Class {
	if c, ok := ctx.Value(classKey{}).(Class); ok && c >= Payment && c <= Background {
		return c
	}
	return Buyer
}
