// The server's per-address limits, as a run meets them: which setting refused which users, named from the
// refusal's words, and how to lift it for a load test. A swarm plays thousands of users from one machine's
// few addresses, which the limits' defaults rightly take for one client flooding the server.

package swarm

import (
	"slices"
	"strings"

	"github.com/waitroom/waitroom/config"
)

// LimitHit is the users one of the server's limits refused, in the end: errors whose last refusal was
// RATE_LIMITED (a socket's error message before close 1013, or a 429 of a REST call).
type LimitHit struct {
	// Settings are the server's settings that refused them (limits.registrations_per_second, ...).
	Settings []string `json:"settings"`
	// Refusal is the server's own words for one of them.
	Refusal string `json:"refusal"`
	Users   int    `json:"users"`
}

// limitRule ties a refusal's words (the server's messages, server/limits.go and orders.go, and the entry's,
// entry/check.go and pow.go) to the settings behind them.
type limitRule struct {
	words    string
	settings []string
}

var limitRules = []limitRule{
	{"too many sockets from your address", []string{"limits.sockets_per_address"}},
	{"too many new connections from your address", []string{"limits.registrations_per_second", "limits.registration_burst"}},
	{"too many challenges", []string{"limits.registrations_per_second", "limits.registration_burst"}},
	{"/challenge: 429", []string{"limits.registrations_per_second", "limits.registration_burst"}},
	{"too many wrong access codes", []string{"limits.wrong_codes_per_minute"}},
	{"too many requests for orders", []string{"limits.orders_per_second", "limits.orders_burst"}},
}

// anyLimit is what a refusal for a limit the rules do not know (a newer server's) names.
var anyLimit = []string{"limits.*"}

// limitSettings names the settings behind an error's text, or nil when no limit refused it.
func limitSettings(errText string) []string {
	for _, rule := range limitRules {
		if strings.Contains(errText, rule.words) {
			return rule.settings
		}
	}
	if strings.Contains(errText, "RATE_LIMITED") || strings.Contains(errText, "rate limited") {
		return anyLimit
	}
	return nil
}

// summarizeLimits groups the error results refused by a limit by the settings that refused them, the most
// users first.
func summarizeLimits(results []result) []LimitHit {
	var hits []LimitHit
	for _, r := range results {
		if r.Outcome != Error {
			continue
		}
		settings := limitSettings(r.ErrText)
		if settings == nil {
			continue
		}
		i := slices.IndexFunc(hits, func(h LimitHit) bool { return slices.Equal(h.Settings, settings) })
		if i < 0 {
			hits = append(hits, LimitHit{Settings: settings, Refusal: r.ErrText})
			i = len(hits) - 1
		}
		hits[i].Users++
	}
	slices.SortStableFunc(hits, func(a, b LimitHit) int { return b.Users - a.Users })
	return hits
}

// LimitAdvice is how to lift the limits a run met, for a load test: the words the table prints after the
// errors, and the command's error.
func LimitAdvice(hits []LimitHit) string {
	var lift []string
	for _, h := range hits {
		for _, s := range h.Settings {
			if s == anyLimit[0] {
				lift = append(lift, "the limits.* settings at 0")
				continue
			}
			if v := config.EnvName(s) + "=0"; !slices.Contains(lift, v) && !strings.HasSuffix(s, "_burst") {
				lift = append(lift, v)
			}
		}
	}
	return "a load test plays many users from a few addresses, which the server's per-address limits take for one client: " +
		"run the server for it with " + strings.Join(lift, " ") + " (0 turns a limit off; make run does), " +
		"or dial from more loopback addresses (-sources N) to stay under them"
}
