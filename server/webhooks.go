// The operator's list of the webhooks: GET /api/admin/webhooks?state=pending|delivered|failed, the outbox's
// deliveries newest first.

package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/webhook"
)

// maxListedWebhooks bounds one answer of the webhooks' list.
const maxListedWebhooks = 500

// adminWebhooks lists the newest webhooks in the state asked for (none asked: every state), at most
// maxListedWebhooks of them; a state that is none of the three is a 400.
func (s *Server) adminWebhooks(c echo.Context) error {
	state, err := webhook.ParseState(c.QueryParam("state"))
	if err != nil {
		return err
	}
	out := []webhook.Delivery{}
	if s.Webhooks != nil {
		if out, err = s.Webhooks.List(c.Request().Context(), state, maxListedWebhooks); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, map[string][]webhook.Delivery{"deliveries": out})
}
