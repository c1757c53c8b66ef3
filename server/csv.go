// The operator's CSV exports (orders, access codes): whether a request asks for one, and the answer as a
// file to save.

package server

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// wantsCSV reports whether the request asks for CSV: ?format=csv, or an Accept naming text/csv.
func wantsCSV(c echo.Context) bool {
	return c.QueryParam("format") == "csv" || strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/csv")
}

// writeCSV answers rows (the header first) as the attachment filename.
func writeCSV(c echo.Context, filename string, rows [][]string) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="%s"`, filename))
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	_ = w.WriteAll(rows)
	return w.Error()
}
