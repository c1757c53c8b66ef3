// The admission log's public routes (docs/admission-log.md, "Routes"): no key, any origin, each answer
// bounded; full tiles cached for a year, since they never change.

package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/fairness"
	"github.com/waitroom/waitroom/queue"
)

// logQueryError refuses a query of the log's routes; Message says what is wrong in words for the caller.
type logQueryError struct{ Message string }

func (e *logQueryError) Error() string { return "server: " + e.Message }

// errNoFairness answers the log's routes of a server that keeps no log.
var errNoFairness = errors.New("this server keeps no admission log")

// publicLog sets what every answer of the log's routes carries.
func publicLog(c echo.Context, cache string) {
	h := c.Response().Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cache-Control", cache)
}

// logScreening is the screening the route names, checked.
func (s *Server) logScreening(c echo.Context) (string, error) {
	if s.Fairness == nil {
		return "", errNoFairness
	}
	id := c.Param("id")
	if !queue.ValidScreening(id) {
		return "", queue.ErrBadScreening
	}
	return id, nil
}

// logKey is GET /.well-known/waitroom-log-key: the note verifier key of the log's checkpoints and receipts.
func (s *Server) logKey(c echo.Context) error {
	if s.Fairness == nil {
		return errNoFairness
	}
	publicLog(c, "public, max-age="+jwksMaxAge)
	return c.String(http.StatusOK, s.Fairness.Key().VerifierKey()+"\n")
}

// logCheckpoint is GET /api/screenings/{id}/log/checkpoint.
func (s *Server) logCheckpoint(c echo.Context) error {
	id, err := s.logScreening(c)
	if err != nil {
		return err
	}
	signed, _, err := s.Fairness.Checkpoint(c.Request().Context(), id)
	if err != nil {
		return err
	}
	publicLog(c, "no-cache")
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", signed)
}

// logTile is GET /api/screenings/{id}/log/tile/…: a hash or data tile (tlog's layout).
func (s *Server) logTile(c echo.Context) error {
	id, err := s.logScreening(c)
	if err != nil {
		return err
	}
	path := "tile/" + c.Param("*")
	if len(path) > 64 {
		return &logQueryError{Message: "a tile path is tile/8/L/NNN[.p/W]"}
	}
	data, full, err := s.Fairness.Tile(c.Request().Context(), id, path)
	if err != nil {
		if errors.Is(err, fairness.ErrNotFound) || errors.Is(err, fairness.ErrNoLog) {
			return err
		}
		if errors.Is(err, fairlog.ErrBadTile) {
			return &logQueryError{Message: "a tile path is tile/8/L/NNN[.p/W], within the latest checkpoint"}
		}
		return err
	}
	cache := "public, max-age=1"
	if full {
		cache = "public, max-age=31536000, immutable"
	}
	publicLog(c, cache)
	return c.Blob(http.StatusOK, "application/octet-stream", data)
}

// logRecords is GET /api/screenings/{id}/log/records?start=S&end=E.
func (s *Server) logRecords(c echo.Context) error {
	id, err := s.logScreening(c)
	if err != nil {
		return err
	}
	start, err1 := strconv.ParseInt(c.QueryParam("start"), 10, 64)
	end, err2 := strconv.ParseInt(c.QueryParam("end"), 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start || end-start > fairness.MaxRecords {
		return &logQueryError{Message: "start and end are record numbers from 0, start ≤ end, at most " +
			strconv.Itoa(fairness.MaxRecords) + " apart"}
	}
	recs, err := s.Fairness.Records(c.Request().Context(), id, start, end)
	if err != nil {
		return err
	}
	publicLog(c, "public, max-age=1")
	return c.JSON(http.StatusOK, map[string]any{"start": start, "records": recs})
}

// logProof is GET /api/screenings/{id}/log/proof?seq=Q.
func (s *Server) logProof(c echo.Context) error {
	id, err := s.logScreening(c)
	if err != nil {
		return err
	}
	seq, err := strconv.ParseInt(c.QueryParam("seq"), 10, 64)
	if err != nil || seq < 1 {
		return &logQueryError{Message: "seq is a place's number, from 1"}
	}
	p, err := s.Fairness.Proof(c.Request().Context(), id, seq)
	if errors.Is(err, fairness.ErrPending) {
		// Not an error: the place is logged and the next checkpoint (within a second) covers it.
		publicLog(c, "no-cache")
		return c.JSON(http.StatusAccepted, map[string]any{"pending": true, "message": "logged; the next checkpoint, within a second, covers it"})
	}
	if err != nil {
		return err
	}
	publicLog(c, "public, max-age=1")
	return c.JSON(http.StatusOK, p)
}
