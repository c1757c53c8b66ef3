// The room page keeps its token out of the socket URL: it connects with auth=message and says hello with
// the token, and a reload keeps its place.

package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// recordSockets is run in every document before its scripts: it notes the URL of every WebSocket the
// page opens and the first frame it sends on each.
const recordSockets = `(() => {
  const Native = window.WebSocket;
  window.__sockets = [];
  window.WebSocket = function (url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    const rec = { url: String(url), first: null };
    window.__sockets.push(rec);
    const send = ws.send.bind(ws);
    ws.send = (data) => { if (rec.first === null) rec.first = String(data); send(data); };
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
})()`

// socketSeen is what the page opened: a socket's URL and the first frame it sent.
type socketSeen struct {
	URL   string `json:"url"`
	First string `json:"first"`
}

// TestBrowserSendsItsTokenInTheHelloNotTheURL: the room page opens its socket with auth=message and no
// token in the URL, sends {"type":"hello"} on its first visit and {"type":"hello","token":T} after a
// reload, and the reload keeps its place in line (the same rank, the line no longer).
func TestBrowserSendsItsTokenInTheHelloNotTheURL(t *testing.T) {
	path := chromium(t)
	env := testenv.New(t, testenv.Embedded)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_ADMISSION_INTERVAL":   "500ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "1",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		"WAITROOM_ADMISSION_ACTIVE_TTL": "5m",
	})
	tab := newTab(t, path)
	// Someone ahead takes the only slot and keeps it, so the browser waits at rank 1 of 1.
	ahead := srv.Dial(t, "demo", "")
	if m, _ := ahead.Until(t, "admitted", 10*time.Second); m.Pass == "" {
		t.Fatalf("the client ahead got %+v, want its pass", m)
	}
	step(t, tab, "record the page's sockets", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordSockets})
		return err
	}))
	step(t, tab, "open the waiting room", chromedp.Navigate(srv.URL+"/s/demo"),
		until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout))
	token := value(t, tab, "stored token", chromedp.Evaluate[string](`JSON.parse(localStorage.getItem('waitroom:room:demo') || '{}').token || ''`))
	if len(token) != 32 {
		t.Fatalf("stored token %q, want the 32 hex digits the server handed out", token)
	}
	first := value(t, tab, "sockets opened", chromedp.Evaluate[[]socketSeen](`window.__sockets`))
	checkSockets(t, "first visit", first, token, `{"type":"hello"}`)

	step(t, tab, "reload", chromedp.Reload(),
		until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout),
		until(`window.__sockets.length > 0 && window.__sockets[0].first !== null`, stepTimeout))
	again := value(t, tab, "sockets opened after the reload", chromedp.Evaluate[[]socketSeen](`window.__sockets`))
	checkSockets(t, "after the reload", again, token, `{"type":"hello","token":"`+token+`"}`)
	total := value(t, tab, "line length", chromedp.Evaluate[string](`document.querySelector('[data-testid="total"]')?.dataset.total ?? ''`))
	if total != "1" {
		t.Errorf("line length after the reload = %s, want 1: the reload kept its place, it did not join again", total)
	}
}

// checkSockets fails the test unless the page opened sockets, each with auth=message and no token in the
// URL, the first of them saying hello as wantFirst.
func checkSockets(t *testing.T, when string, seen []socketSeen, token, wantFirst string) {
	t.Helper()
	if len(seen) == 0 {
		t.Fatalf("%s: the page opened no socket", when)
	}
	for _, s := range seen {
		if !strings.Contains(s.URL, "auth=message") || strings.Contains(s.URL, "token") || strings.Contains(s.URL, token) {
			t.Errorf("%s: socket URL %s, want auth=message and no token", when, s.URL)
		}
	}
	if seen[0].First != wantFirst {
		t.Errorf("%s: first frame %s, want %s", when, seen[0].First, wantFirst)
	}
}
