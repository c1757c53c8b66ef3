package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// After a socket's handler, the echo context (which echo keeps in its pool) no longer reaches the HTTP
// request, its headers or its connection's response writer; what the middleware around it logs is kept.
func TestForgetRequestKeepsOnlyWhatTheLogReads(t *testing.T) {
	e := echo.New()
	req := httptest.NewRequest(http.MethodGet, "/ws/screenings/demo?token=abc", nil)
	req.Header.Set("Cookie", strings.Repeat("x", 4096))
	rec := httptest.NewRecorder()
	c := e.NewContext(req, rec)
	c.Response().Header().Set(echo.HeaderXRequestID, "rid-1")
	err := forgetRequest(func(c echo.Context) error {
		c.Response().Status = http.StatusSwitchingProtocols
		return nil
	})(c)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Request()
	if got == req || len(got.Header) != 0 || got.Body != nil {
		t.Fatalf("the context still holds the request (or its headers, body): %+v", got)
	}
	if got.Method != http.MethodGet || got.URL.Path != "/ws/screenings/demo" || got.Context() == nil {
		t.Fatalf("kept request %s %v, want GET /ws/screenings/demo with a context", got.Method, got.URL)
	}
	resp := c.Response()
	if resp.Writer == http.ResponseWriter(rec) {
		t.Fatal("the context still holds the connection's response writer")
	}
	if resp.Status != http.StatusSwitchingProtocols || resp.Header().Get(echo.HeaderXRequestID) != "rid-1" {
		t.Fatalf("kept status %d, request id %q; want 101, rid-1", resp.Status, resp.Header().Get(echo.HeaderXRequestID))
	}
	if _, err := resp.Writer.Write([]byte("x")); err == nil {
		t.Fatal("a write after the handler went somewhere")
	}
}
