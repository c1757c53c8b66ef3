// The embedded pages (the screenings, the waiting room, the control room, the ticket, the demo checkout)
// and their assets, revalidated on every load.

package server

import (
	"io/fs"
	"net/http"
	"strings"

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

// withoutDemoCheckout is an FS of the pages without the demo checkout's page and module (checkout.html,
// checkout/), for a server that does not serve the demo checkout: its parts are not served either.
type withoutDemoCheckout struct{ fs.FS }

func (f withoutDemoCheckout) Open(name string) (fs.File, error) {
	if name == "checkout.html" || name == "checkout" || strings.HasPrefix(name, "checkout/") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return f.FS.Open(name)
}

// staticFS is the pages' assets this server serves under /static/.
func (s *Server) staticFS() fs.FS {
	if s.Checkout.demo() {
		return web.FS
	}
	return withoutDemoCheckout{web.FS}
}
