// The checks of where buyers pay (booking.checkout, checkout_url, demo_checkout, confirm_key), apart from
// Validate's list.

package config

import "errors"

// validateCheckout names what cannot work in how held orders are paid: a hold-mode server needs somewhere
// to pay, and the demo checkout, which confirms without payment or key, never stands beside a real one.
func (b Booking) validateCheckout() []error {
	var errs []error
	if b.DemoCheckout && b.ConfirmKey != "" {
		errs = append(errs, errors.New("booking.demo_checkout must be off when booking.confirm_key is set: "+
			"the demo's Pay button confirms an order without the key or a payment (make run turns it on: set WAITROOM_BOOKING_DEMO_CHECKOUT=false)"))
	}
	if b.DemoCheckout && b.CheckoutURL != "" {
		errs = append(errs, errors.New("booking.demo_checkout must be off when booking.checkout_url is set: buyers pay at the shop"))
	}
	if b.Checkout == "hold" && b.CheckoutURL == "" && !b.DemoCheckout {
		errs = append(errs, errors.New("booking.checkout is hold but buyers have nowhere to pay: "+
			"set booking.checkout_url (the shop's payment page, with {code}) or, for a demo with no payment, booking.demo_checkout: true"))
	}
	return errs
}
