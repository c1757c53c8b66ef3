// Reservations: POST /api/screenings/{id}/reservations, with the pass as its bearer token and an optional
// Idempotency-Key.

package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/pass"
)

// reserveBody is POST /api/screenings/{id}/reservations: the seats by name, or a count of seats the server
// picks (best available), not both.
type reserveBody struct {
	Seats []string `json:"seats"`
	Count *int     `json:"count"`
}

func (s *Server) reserve(c echo.Context) error {
	ctx := c.Request().Context()
	bearer, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	if !ok || bearer == "" {
		return pass.ErrInvalid
	}
	var body reserveBody
	if err := decodeStrict(c, maxBodyBytes, &body, errBadBody); err != nil {
		return err
	}
	key := c.Request().Header.Get("Idempotency-Key")
	if !validKey(key) {
		return errBadKey
	}
	var r booking.Reservation
	var err error
	switch {
	case body.Count != nil && body.Seats != nil:
		return errBadBody
	case body.Count != nil:
		r, err = s.Booking.ReserveBest(ctx, c.Param("id"), bearer, key, *body.Count)
	default:
		r, err = s.Booking.ReserveOnce(ctx, c.Param("id"), bearer, key, body.Seats)
	}
	var after *booking.AfterCommitError
	if errors.As(err, &after) {
		s.logFor(c).Warn("reserve: committed, follow-up failed", "screening", c.Param("id"), "err", err)
		err = nil
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.reservationView(r))
}

// reservationView is a new order as the reservation answers it: the reservation, with where its buyer pays
// while it is held and its ticket.
func (s *Server) reservationView(r booking.Reservation) reservationAnswer {
	return reservationAnswer{Reservation: r, orderLinks: s.linksOf(r.Code, r.Status)}
}

// reservationAnswer is the 201 of a reservation.
type reservationAnswer struct {
	booking.Reservation
	orderLinks
}

// maxKeyLen bounds an Idempotency-Key (a UUID is 36 characters).
const maxKeyLen = 255

// validKey accepts an absent key or 1..255 visible ASCII characters.
func validKey(key string) bool {
	if len(key) > maxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return false
		}
	}
	return true
}
