// The embedded pages (the screenings, the waiting room, the control room) and their assets, revalidated on
// every load.

package server

import (
	"io/fs"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/web"
)

func noCache(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-cache")
		return next(c)
	}
}

// page serves one embedded HTML page, read once; the page reads its screening id from the URL itself.
func page(name string) echo.HandlerFunc {
	b, err := fs.ReadFile(web.FS, name)
	if err != nil {
		panic(err) // the pages are embedded at build time
	}
	return func(c echo.Context) error { return c.HTMLBlob(http.StatusOK, b) }
}
