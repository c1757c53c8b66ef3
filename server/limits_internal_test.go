// The pace of new sockets, given by the caller, is shared with whoever else spends it (the gate's places).

package server

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/limit"
)

func TestNewSocketsSpendTheSharedPaceTheyAreGiven(t *testing.T) {
	shared := limit.NewRate(0.001, 2)
	now := time.Now()
	if !shared.Allow("198.51.100.7", now) { // a place the gate registered for the address
		t.Fatal("the shared pace refused its first use")
	}
	a := newAddressLimits(Limits{RegistrationsPerSecond: 0.001, RegistrationBurst: 2, Registrations: shared})
	if ok, reason := a.admit("198.51.100.7", now); !ok {
		t.Fatalf("a socket with one of the burst of 2 left = refused (%s), want admitted", reason)
	}
	if ok, _ := a.admit("198.51.100.7", now); ok {
		t.Error("a socket past the burst the gate shared = admitted, want refused")
	}
}
