// The place's receipt on the room page: shown once the browser has a place, signed by the log's key for
// the browser's own token, and checked by the page itself against the public admission log.

package browser

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// TestBrowserShowsItsReceiptAndChecksItInTheLog: the browser waits in line behind a client that holds the
// only slot; the page shows its receipt, which opens with the key the server publishes and names the
// browser's token's hash, and the page says the receipt and the log's checkpoint are signed by that key and
// the log holds the place (its own checks, WebCrypto Ed25519 and SHA-256).
func TestBrowserShowsItsReceiptAndChecksItInTheLog(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		key := logKeyWithPlus(t)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMISSION_INTERVAL":   "500ms",
			"WAITROOM_ADMISSION_BATCH_SIZE": "1",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
			"WAITROOM_FAIRNESS_KEY":         key,
		})
		tab := newTab(t, path)
		_, holder := admittedPass(t, srv, "demo") // holds the only slot, so the browser waits
		defer holder.Close()

		step(t, tab, "open the waiting room", chromedp.Navigate(srv.URL+"/s/demo"))
		step(t, tab, "the receipt shown", until(`!document.querySelector('[data-testid="receipt"]').hidden`, stepTimeout))
		step(t, tab, "the page finds its receipt in the log",
			until(`document.querySelector('[data-testid="receipt-status"]').dataset.state === 'included'`, 20*time.Second))
		type shown struct{ Receipt, Token, Status string }
		got := value(t, tab, "the receipt and the token", chromedp.Evaluate[shown](`(() => {
			const stored = Object.entries(localStorage).find(([k]) => k.includes('demo'));
			return {
				Receipt: document.querySelector('[data-testid="receipt-text"]').textContent,
				Token: stored ? JSON.parse(stored[1]).token : '',
				Status: document.querySelector('[data-testid="receipt-status"]').textContent,
			};
		})()`))
		resp, err := http.Get(srv.URL + "/.well-known/waitroom-log-key")
		if err != nil {
			t.Fatal(err)
		}
		vkey, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r, err := fairlog.OpenReceipt([]byte(got.Receipt), strings.TrimSpace(string(vkey)))
		if err != nil {
			t.Fatalf("the receipt shown does not open with the published key: %v\n%s", err, got.Receipt)
		}
		if r.Screening != "demo" || r.Seq < 2 || r.TokenHash != fairlog.TokenHash(got.Token) {
			t.Errorf("receipt %+v for token %q, want demo, a place after the holder's, the token's hash", r, got.Token)
		}
		if !strings.Contains(got.Status, "Checked") || !strings.Contains(got.Status, "signed by the log's key") {
			t.Errorf("the page says %q, want that it checked its receipt's signature and its place", got.Status)
		}
	})
}

// logKeyWithPlus draws a log key whose verifier key's base64 holds a '+', the separator of the key's
// fields too: the page must not split the key there (half of all keys hold one).
func logKeyWithPlus(t *testing.T) string {
	t.Helper()
	for {
		entry, err := fairlog.GenerateKey("browser-log")
		if err != nil {
			t.Fatal(err)
		}
		k, err := fairlog.ParseKey(entry)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(k.VerifierKey(), "+") > 2 {
			return entry
		}
	}
}
