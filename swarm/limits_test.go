package swarm

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// The server's refusals for a limit, in its own words, name the settings behind them; the report's table
// says which and how to lift them; other errors name none.
func TestTheReportNamesTheLimitThatRefusedUsersAndHowToLiftIt(t *testing.T) {
	socketRate := "server error RATE_LIMITED: too many new connections from your address; retry later with your token; then websocket: close 1013: rate limited"
	socketCap := "server error RATE_LIMITED: too many sockets from your address; retry later with your token; then websocket: close 1013: rate limited"
	orders := "POST http://x/api/orders/abc/pay: 429 RATE_LIMITED: too many requests for orders from your address; retry in 1 s"
	challenge := "GET http://x/api/screenings/demo/challenge: 429 RATE_LIMITED"
	results := []result{
		{Outcome: Error, ErrKind: "closed 1013 (after 5 reconnects)", ErrText: socketRate},
		{Outcome: Error, ErrKind: "closed 1013 (after 5 reconnects)", ErrText: socketRate},
		{Outcome: Error, ErrKind: "closed 1013 (after 5 reconnects)", ErrText: socketCap},
		{Outcome: Error, ErrKind: "challenge 429", ErrText: challenge},
		{Outcome: Error, ErrKind: "reserve 429 RATE_LIMITED", ErrText: orders},
		{Outcome: Error, ErrKind: "closed 1011", ErrText: "websocket: close 1011: internal error"},
		{Outcome: Ticket},
	}
	rep := summarize(Config{Users: len(results), Mode: Flow}, results, 0)
	want := []LimitHit{
		{Settings: []string{"limits.registrations_per_second", "limits.registration_burst"}, Refusal: socketRate, Users: 3},
		{Settings: []string{"limits.sockets_per_address"}, Refusal: socketCap, Users: 1},
		{Settings: []string{"limits.orders_per_second", "limits.orders_burst"}, Refusal: orders, Users: 1},
	}
	if !slices.EqualFunc(rep.Limits, want, func(a, b LimitHit) bool {
		return slices.Equal(a.Settings, b.Settings) && a.Refusal == b.Refusal && a.Users == b.Users
	}) {
		t.Errorf("Limits = %+v, want %+v", rep.Limits, want)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"LIMITS  3 users refused by the server's limits.registrations_per_second / limits.registration_burst",
		"LIMITS  1 users refused by the server's limits.sockets_per_address",
		"WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND=0 WAITROOM_LIMITS_SOCKETS_PER_ADDRESS=0 WAITROOM_LIMITS_ORDERS_PER_SECOND=0",
		"-sources N",
	} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("the table lacks %q:\n%s", line, table.String())
		}
	}
}

func TestAnErrorNoLimitRefusedNamesNone(t *testing.T) {
	rep := summarize(Config{Users: 1, Mode: Flow}, []result{{Outcome: Error, ErrKind: "closed 1013 (after 5 reconnects)",
		ErrText: "server error UNAVAILABLE: the line cannot be read; then websocket: close 1013: unavailable"}}, 0)
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if rep.Limits != nil || strings.Contains(table.String(), "LIMITS") {
		t.Errorf("Limits = %+v, table:\n%s\nwant none", rep.Limits, table.String())
	}
}
