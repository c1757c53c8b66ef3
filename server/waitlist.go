// The waitlist's routes (docs/protocol.md 5.4, 7.13): a waiting buyer's party size, and what the screening
// and the operator's views say of the waitlist.

package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/queue"
)

// codedError is a refusal with its own status and code, its message in words for the user.
type codedError struct {
	status        int
	code, message string
}

func (e *codedError) Error() string { return fmt.Sprintf("%s: %s", e.code, e.message) }

// partyBody is PUT /api/screenings/{id}/waitlist.
type partyBody struct {
	Token string `json:"token"`
	Party int    `json:"party"`
}

// errBadPartyBody refuses a body that is not one partyBody.
var errBadPartyBody = errors.New("bad body")

// putWaitlist sets the party size a waiting buyer waits for: the waitlist offers it that many seats at once.
func (s *Server) putWaitlist(c echo.Context) error {
	var body partyBody
	if err := decodeStrict(c, maxBodyBytes, &body, errBadPartyBody); err != nil {
		if errors.Is(err, errBadPartyBody) {
			return &codedError{http.StatusBadRequest, "BAD_REQUEST", `the body must be {"token":"…","party":N}`}
		}
		return err
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	if _, err := s.Store.Screening(ctx, id); err != nil {
		return err
	}
	if !queue.ValidToken(body.Token) {
		return fmt.Errorf("waitlist: %w", queue.ErrBadToken)
	}
	on, err := s.Booking.Waitlist(ctx, id)
	if err != nil {
		return err
	}
	if !on {
		return &codedError{http.StatusConflict, "WAITLIST_OFF", "this screening keeps no waitlist"}
	}
	if most := s.Booking.MaxSeats(); body.Party < 1 || body.Party > most {
		return &codedError{http.StatusBadRequest, "INVALID_PARTY", fmt.Sprintf("a party is 1 to %d seats", most)}
	}
	if err := s.Queue.SetParty(ctx, id, body.Token, body.Party); errors.Is(err, queue.ErrNotWaiting) {
		return &codedError{http.StatusNotFound, "NOT_IN_LINE", "this token is not waiting in the screening's line"}
	} else if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int{"party": body.Party})
}
