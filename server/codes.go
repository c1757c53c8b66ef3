// The operator's access codes of a screening under /api/admin: issuing one-time codes, setting the shared
// code, listing them (JSON or CSV) and revoking one.

package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/waitroom/waitroom/booking"
)

// codesBody is POST /api/admin/screenings/:id/codes: either a count of one-time codes to issue, or the shared
// code to set ("" removes it).
type codesBody struct {
	Count  *int    `json:"count"`
	Shared *string `json:"shared"`
}

// codeView is one one-time code on the wire.
type codeView struct {
	Code      string     `json:"code"`
	State     string     `json:"state"`
	CreatedAt time.Time  `json:"created_at"`
	UsedAt    *time.Time `json:"used_at"`
}

// codesList is GET /api/admin/screenings/:id/codes.
type codesList struct {
	Codes         []codeView `json:"codes"`
	Shared        bool       `json:"shared"`
	CodesRequired bool       `json:"codes_required"`
}

// adminIssueCodes issues one-time codes (201 with them) or sets the shared code (200): either makes the
// screening require a code.
func (s *Server) adminIssueCodes(c echo.Context) error {
	var body codesBody
	if err := decodeAdminBody(c, maxBodyBytes, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	switch {
	case (body.Count == nil) == (body.Shared == nil):
		return refuseScreening(`give {"count": N} to issue one-time codes or {"shared": "CODE"} to set the shared code, not both`)
	case body.Count != nil:
		codes, err := s.Store.IssueCodes(ctx, id, *body.Count)
		if err != nil {
			return codesError(c, err)
		}
		s.Entry.Forget(id)
		s.logFor(c).Info("admin: codes issued", "screening", id, "count", len(codes))
		return c.JSON(http.StatusCreated, map[string][]string{"codes": codes})
	}
	if err := s.Store.SetSharedCode(ctx, id, *body.Shared); err != nil {
		return codesError(c, err)
	}
	s.Entry.Forget(id)
	access, err := s.Store.Access(ctx, id)
	if err != nil {
		return codesError(c, err)
	}
	s.logFor(c).Info("admin: shared code set", "screening", id, "removed", !access.Shared)
	return c.JSON(http.StatusOK, map[string]any{"shared": booking.NormalizeCode(*body.Shared), "codes_required": access.CodesRequired})
}

// adminCodes lists the screening's codes: JSON, or CSV with ?format=csv or Accept: text/csv.
func (s *Server) adminCodes(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	access, err := s.Store.Access(ctx, id)
	if err != nil {
		return codesError(c, err)
	}
	list, err := s.Store.Codes(ctx, id)
	if err != nil {
		return codesError(c, err)
	}
	if wantsCSV(c) {
		return writeCodesCSV(c, id, list)
	}
	out := codesList{Codes: make([]codeView, len(list)), Shared: access.Shared, CodesRequired: access.CodesRequired}
	for i, a := range list {
		out.Codes[i] = codeView{Code: a.Code, State: a.State, CreatedAt: a.CreatedAt, UsedAt: a.UsedAt}
	}
	return c.JSON(http.StatusOK, out)
}

// writeCodesCSV answers the codes as a CSV file to save: code,state,created_at,used_at, times in RFC 3339.
func writeCodesCSV(c echo.Context, id string, list []booking.AccessCode) error {
	rows := [][]string{{"code", "state", "created_at", "used_at"}}
	for _, a := range list {
		usedAt := ""
		if a.UsedAt != nil {
			usedAt = a.UsedAt.UTC().Format(time.RFC3339)
		}
		rows = append(rows, []string{a.Code, a.State, a.CreatedAt.UTC().Format(time.RFC3339), usedAt})
	}
	return writeCSV(c, "codes-"+id+".csv", rows)
}

// adminRevokeCode revokes a one-time code (it stays listed as revoked) or removes the shared code: 204.
func (s *Server) adminRevokeCode(c echo.Context) error {
	id := c.Param("id")
	if err := s.Store.RevokeCode(c.Request().Context(), id, c.Param("code")); err != nil {
		return codesError(c, err)
	}
	s.logFor(c).Info("admin: code revoked", "screening", id)
	return c.NoContent(http.StatusNoContent)
}

// codesError answers the refusal only the codes' routes give (no such code: 404 UNKNOWN_CODE); every other
// error goes on to the server's error handler.
func codesError(c echo.Context, err error) error {
	if errors.Is(err, booking.ErrUnknownCode) {
		return c.JSON(http.StatusNotFound, apiError{Error: apiErrorBody{Code: "UNKNOWN_CODE", Message: "the screening has no such access code"}})
	}
	return err
}
