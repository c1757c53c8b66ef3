// The buyers' e-mail routes (package notify): an address left for a token's turn, the address forgotten,
// and a mailed link claimed for the place it stands for.

package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/queue"
)

// NotifyLines is what the e-mail routes need of the line: whether token holds a place in screening
// (waiting in its line or on its waitlist, or admitted), and to keep a token that left an address from
// being taken for abandoned while no socket of its is open (keep false: counted as before; a token not
// kept, or gone, is no error).
type NotifyLines interface {
	Holds(ctx context.Context, screening, token string) (bool, error)
	Keep(ctx context.Context, screening, token string, keep bool) error
}

// maxNotifyBody bounds the routes' bodies: a token, an address of at most 254 bytes, a language.
const maxNotifyBody = 1 << 10

// notifyBody is PUT /api/screenings/:id/notify; its token alone, DELETE's.
type notifyBody struct {
	Token string `json:"token"`
	Email string `json:"email"`
	Lang  string `json:"lang"`
}

type notifyForgetBody struct {
	Token string `json:"token"`
}

// notifyClaimBody is POST /api/notify/claim: the nonce of the link's ?claim=.
type notifyClaimBody struct {
	Claim string `json:"claim"`
}

var errBadNotifyBody = errors.New("bad notify body")

// notifyRoutes answers the routes over the service (nil: e-mail is off) and the line.
type notifyRoutes struct {
	svc   *notify.Service
	lines NotifyLines
}

// registerNotify adds the e-mail routes to api, each behind mw (a per-address pace):
//
//	PUT    /screenings/:id/notify  {"token","email","lang"} → 200 {"email": masked, "lang"}
//	DELETE /screenings/:id/notify  {"token"}                → 204
//	POST   /notify/claim           {"claim"}                → 200 {"screening","token"}
//
// A refusal changes nothing.
func registerNotify(api *echo.Group, svc *notify.Service, lines NotifyLines, mw ...echo.MiddlewareFunc) {
	r := notifyRoutes{svc: svc, lines: lines}
	api.PUT("/screenings/:id/notify", r.subscribe, mw...)
	api.DELETE("/screenings/:id/notify", r.unsubscribe, mw...)
	api.POST("/notify/claim", r.claim, mw...)
}

// notifyRefusal answers a refusal of the e-mail routes in the server's error body.
func notifyRefusal(c echo.Context, status int, code, message string) error {
	return c.JSON(status, apiError{Error: apiErrorBody{Code: code, Message: message}})
}

func notifyOff(c echo.Context) error {
	return notifyRefusal(c, http.StatusConflict, "NOTIFY_OFF", "this server sends no e-mail")
}

// decodeNotify reads the one JSON object of a route's body into v: a malformed one is 400 BAD_REQUEST
// (answered, and ok false), a body too large the error handler's 413.
func decodeNotify(c echo.Context, v any, shape string) (ok bool, err error) {
	if err := decodeStrict(c, maxNotifyBody, v, errBadNotifyBody); err != nil {
		if errors.Is(err, errBadNotifyBody) {
			return false, notifyRefusal(c, http.StatusBadRequest, "BAD_REQUEST", "the body must be "+shape)
		}
		return false, err
	}
	return true, nil
}

// subscribe keeps an address for a token that holds a place: the e-mail goes when its turn comes and no
// socket of its is open. The answer shows the address masked.
func (r notifyRoutes) subscribe(c echo.Context) error {
	if !r.svc.Enabled() {
		return notifyOff(c)
	}
	var body notifyBody
	if ok, err := decodeNotify(c, &body, `{"token":"…","email":"…","lang":"en" or "ko"}`); !ok {
		return err
	}
	email, err := notify.ParseEmail(body.Email)
	if err != nil {
		return notifyRefusal(c, http.StatusBadRequest, "INVALID_EMAIL", "give one e-mail address, nothing else (no name), at most 254 characters")
	}
	lang := body.Lang
	if lang == "" {
		lang = "en"
	}
	if _, err := notify.ParseLang(lang); err != nil {
		return notifyRefusal(c, http.StatusBadRequest, "INVALID_LANG", "lang is en or ko")
	}
	if !queue.ValidToken(body.Token) {
		return queue.ErrBadToken
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	holds, err := r.lines.Holds(ctx, id, body.Token)
	if err != nil {
		return err
	}
	if !holds {
		return notifyRefusal(c, http.StatusNotFound, "NOT_IN_LINE", "this token holds no place in this screening's line or waitlist")
	}
	if err := r.svc.Subscribe(ctx, id, body.Token, email, lang); err != nil {
		if errors.Is(err, notify.ErrOff) {
			return notifyOff(c)
		}
		return err
	}
	if err := r.lines.Keep(ctx, id, body.Token, true); err != nil {
		// Not kept, the token could be dropped as abandoned with its address on file: forget the address.
		_ = r.svc.Unsubscribe(context.WithoutCancel(ctx), id, body.Token)
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"email": notify.MaskEmail(email), "lang": lang})
}

// unsubscribe forgets a token's address, and its e-mail not yet sent: 204, whether there was one or not.
func (r notifyRoutes) unsubscribe(c echo.Context) error {
	if r.svc == nil {
		return notifyOff(c)
	}
	var body notifyForgetBody
	if ok, err := decodeNotify(c, &body, `{"token":"…"}`); !ok {
		return err
	}
	if !queue.ValidToken(body.Token) {
		return queue.ErrBadToken
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := r.svc.Unsubscribe(ctx, id, body.Token); err != nil {
		return err
	}
	if err := r.lines.Keep(ctx, id, body.Token, false); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// claim exchanges a mailed link for its screening and token, once. The answer carries a token: no cache
// keeps it.
func (r notifyRoutes) claim(c echo.Context) error {
	if r.svc == nil {
		return notifyOff(c)
	}
	var body notifyClaimBody
	if ok, err := decodeNotify(c, &body, `{"claim":"…"}`); !ok {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	screening, token, err := r.svc.Claim(c.Request().Context(), body.Claim)
	switch {
	case errors.Is(err, notify.ErrLinkUsed):
		return notifyRefusal(c, http.StatusGone, "LINK_USED", "this link was opened already; it opens once")
	case errors.Is(err, notify.ErrLinkExpired):
		return notifyRefusal(c, http.StatusGone, "LINK_EXPIRED", "this link has expired")
	case errors.Is(err, notify.ErrLinkUnknown):
		return notifyRefusal(c, http.StatusNotFound, "LINK_UNKNOWN", "no such link")
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"screening": screening, "token": token})
}
