package config

import (
	"strings"
	"testing"
)

// A hold-mode server needs somewhere for buyers to pay, and the demo checkout (Pay confirms with no payment
// and no key) is on only when asked for, and never beside a confirm key or a shop: each refusal names its
// keys.
func TestHoldNeedsACheckoutAndTheDemoIsNeverBesideARealOne(t *testing.T) {
	const key, shop = "confirm-key-0123456789", "https://shop.example/pay?order={code}"
	cases := []struct {
		vars map[string]string
		want []string // what the error names; none: no error
	}{
		{map[string]string{"WAITROOM_BOOKING_CHECKOUT": "hold"}, []string{"booking.checkout", "booking.checkout_url", "booking.demo_checkout"}},
		{map[string]string{"WAITROOM_BOOKING_CHECKOUT": "hold", "WAITROOM_BOOKING_CONFIRM_KEY": key}, []string{"booking.checkout_url", "booking.demo_checkout"}},
		{map[string]string{"WAITROOM_BOOKING_DEMO_CHECKOUT": "true", "WAITROOM_BOOKING_CONFIRM_KEY": key}, []string{"booking.demo_checkout", "booking.confirm_key"}},
		{map[string]string{"WAITROOM_BOOKING_DEMO_CHECKOUT": "true", "WAITROOM_BOOKING_CHECKOUT_URL": shop}, []string{"booking.demo_checkout", "booking.checkout_url"}},
		{map[string]string{"WAITROOM_BOOKING_CHECKOUT": "hold", "WAITROOM_BOOKING_DEMO_CHECKOUT": "true"}, nil},
		{map[string]string{"WAITROOM_BOOKING_CHECKOUT": "hold", "WAITROOM_BOOKING_CHECKOUT_URL": shop, "WAITROOM_BOOKING_CONFIRM_KEY": key}, nil},
		{map[string]string{"WAITROOM_BOOKING_DEMO_CHECKOUT": "true"}, nil},
		{nil, nil},
	}
	for _, tc := range cases {
		_, err := Load("", false, env(tc.vars))
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("Load(%v) = %v, want no error", tc.vars, err)
			}
			continue
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Load(%v) error = %v, want one naming %s", tc.vars, err, w)
			}
		}
	}
}
