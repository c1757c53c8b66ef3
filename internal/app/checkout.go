// The start's check of the screenings' checkout: a server where buyers have nowhere to pay serves no
// screening that holds its orders until they are paid.

package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
)

// maxNamedScreenings bounds the screenings a refusal names, so that its line stays readable.
const maxNamedScreenings = 10

// checkHoldScreenings refuses to start a server with no checkout (neither booking.checkout_url nor
// booking.demo_checkout) while screenings in the database sell in a hold mode of their own, set by an
// operator while another configuration ran: their buyers would have nowhere to pay. (config.Validate
// refuses booking.checkout: hold itself so; the admin API, a screening switched to hold.) A closed sale
// takes no new orders and is let be.
func checkHoldScreenings(ctx context.Context, store *booking.Store, b config.Booking) error {
	if b.CheckoutURL != "" || b.DemoCheckout {
		return nil
	}
	all, err := store.Screenings(ctx)
	if err != nil {
		return fmt.Errorf("app: the screenings' checkout: %w", err)
	}
	var hold []string
	for _, s := range all {
		if s.Checkout == booking.CheckoutHold && s.ClosedAt == nil {
			hold = append(hold, fmt.Sprintf("%q", s.ID))
		}
	}
	if len(hold) == 0 {
		return nil
	}
	named := "screening " + hold[0] + " sells"
	if len(hold) > 1 {
		named = "screenings " + strings.Join(hold[:min(len(hold), maxNamedScreenings)], ", ")
		if len(hold) > maxNamedScreenings {
			named += fmt.Sprintf(" and %d more", len(hold)-maxNamedScreenings)
		}
		named += " sell"
	}
	return fmt.Errorf("app: %s in hold checkout, but this server has neither booking.checkout_url nor "+
		"booking.demo_checkout, so buyers would have nowhere to pay: set booking.checkout_url (the shop's payment page) "+
		"or, for a demo, booking.demo_checkout; or set each back to instant first (PATCH /api/admin/screenings/{id}/admission "+
		`{"checkout":"instant"} on a server that has a checkout, or UPDATE screenings SET checkout = 'instant' WHERE id = ... `+
		"in the database), or close its sale", named)
}
