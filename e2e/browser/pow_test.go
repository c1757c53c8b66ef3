// The room page's proof of work in Chromium: a screening that asks for one shows the widget, which solves
// on its own before the socket connects, in the page's language; the page joins and books, and a reload
// keeps the place without solving again. A benchmark of the widget's solve time, run on request.

package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// testPowCost is the proof of work the tests ask for: a mean of 50 key derivations of pow.iterations
// (1000 PBKDF2 iterations by default), a fraction of a second in the browser.
const testPowCost = 50

// recordPhases is run in every document before its scripts: it notes each phase the room page shows
// (#main's data-phase), so a test sees a view that came and went.
const recordPhases = `(() => {
  window.__phases = [];
  new MutationObserver((ms) => {
    for (const m of ms) if (m.target.id === 'main') window.__phases.push(m.target.dataset.phase);
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-phase'] });
})()`

// onNewDocument runs each script in every document the tab opens from now on, before the page's own.
func onNewDocument(scripts ...string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		for _, s := range scripts {
			if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: s}); err != nil {
				return err
			}
		}
		return nil
	})
}

// setPowCost sets the screening's proof of work through the admin API and checks the answer and the
// public screening say it.
func setPowCost(t *testing.T, srv *apptest.Server, id string, cost int) {
	t.Helper()
	var out map[string]any
	if code := srv.Admin(t, http.MethodPatch, "/screenings/"+id+"/admission", map[string]any{"pow_cost": cost}, &out); code != http.StatusOK {
		t.Fatalf("PATCH pow_cost %d of %s: %d %v, want 200", cost, id, code, out)
	}
	if got, _ := out["pow_cost"].(float64); int(got) != cost {
		t.Errorf("PATCH pow_cost %d answered pow_cost %v, want %d", cost, out["pow_cost"], cost)
	}
	var pub map[string]any
	srv.GetJSON(t, "/api/screenings/"+id, &pub)
	if got, _ := pub["pow_cost"].(float64); int(got) != cost {
		t.Errorf("GET /api/screenings/%s pow_cost = %v, want %d", id, pub["pow_cost"], cost)
	}
}

// entryCounts reads the server's count of sockets let in as new places (ok) and as tokens that held their
// place (kept), and of the challenges it issued.
type entryCounts struct{ OK, Kept, Challenges int }

func readEntryCounts(t *testing.T, srv *apptest.Server) entryCounts {
	t.Helper()
	series := func(s string) int {
		n, _ := apptest.MetricSeries(t, http.DefaultClient, srv.OpsURL, s)
		return n
	}
	return entryCounts{
		OK:         series(`waitroom_entry_checks_total{outcome="ok"}`),
		Kept:       series(`waitroom_entry_checks_total{outcome="kept"}`),
		Challenges: series(`waitroom_pow_challenges_total`),
	}
}

// pause pauses the screening's admission, so the page waits in line where the test can look at it.
func pause(t *testing.T, srv *apptest.Server, id string) {
	t.Helper()
	if code := srv.Admin(t, http.MethodPost, "/screenings/"+id+"/pause", nil, nil); code != http.StatusOK {
		t.Fatalf("pause %s: %d, want 200", id, code)
	}
}

// roomSeen is what a test reads of the room page after it joined: the phases it showed, its texts, what
// it fetched and the sockets it opened.
type roomSeen struct {
	Phases                []string
	Lang, Heading, Status string
	Widget                string // the widget's label, '' when there is none
	Challenges, Widgets   int    // challenges fetched, and the widget's module loaded, in this document
	Sockets               []socketSeen
	Token, Rank, Total    string
}

// readRoom reads roomSeen of screening id's room.
func readRoom(t *testing.T, tab context.Context, id string) roomSeen {
	t.Helper()
	return value(t, tab, "the room page", chromedp.Evaluate[roomSeen](fmt.Sprintf(`(() => {
		const q = (s) => document.querySelector(s);
		const loaded = (part) => performance.getEntriesByType('resource').filter((e) => e.name.includes(part)).length;
		const w = q('altcha-widget label');
		return {
			Phases: window.__phases, Lang: document.documentElement.lang,
			Heading: q('#entry-heading').textContent, Status: q('[data-testid="pow-status"]').textContent,
			Widget: w ? w.textContent.trim() : '',
			Challenges: loaded('/challenge'), Widgets: loaded('/vendor/altcha/altcha.min.js'),
			Sockets: window.__sockets,
			Token: JSON.parse(localStorage.getItem(%q) || '{}').token || '',
			Rank: q('[data-testid="rank"]').dataset.rank, Total: q('[data-testid="total"]').dataset.total,
		};
	})()`, "waitroom:room:"+id)))
}

// altchaSockets counts the sockets whose hello carried a solution, and says whether any solution was sent
// twice, or travelled in a socket's URL, where proxies log it.
func altchaSockets(seen []socketSeen) (n int, repeated bool) {
	sent := map[string]bool{}
	for _, s := range seen {
		if strings.Contains(s.URL, "altcha=") || strings.Contains(s.URL, "code=") {
			repeated = true // a solution or a code in the URL is as bad as a solution sent twice
		}
		var hello struct{ Altcha string }
		if json.Unmarshal([]byte(s.First), &hello) != nil || hello.Altcha == "" {
			continue
		}
		n++
		repeated = repeated || sent[hello.Altcha]
		sent[hello.Altcha] = true
	}
	return n, repeated
}

// TestBrowserPowSolvedJoinsAndBooks: with a proof of work asked, the room shows the widget,
// which solves on its own in the page's language, the socket carries the solution once and the page
// joins; a reload keeps the place without loading the widget or solving again; and the turn books a seat.
// Once in English, once in Korean.
func TestBrowserPowSolvedJoinsAndBooks(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
		for _, lang := range []struct{ code, heading, solved, verified, booked string }{
			{"en", "Before you join the line", "Checked. Joining the line…", "Verified", "Booked"},
			{"ko", "줄에 서기 전에", "확인되었습니다. 줄에 서는 중…", "확인됨", "예매 완료"},
		} {
			t.Run(lang.code, func(t *testing.T) {
				id := "pow-" + lang.code
				saleScreening(t, srv, id, "Proof night", 2, 5, 1)
				setPowCost(t, srv, id, testPowCost)
				pause(t, srv, id)
				tab := newTab(t, path)
				before := readEntryCounts(t, srv)
				step(t, tab, "choose the language and record the page",
					onNewDocument(recordSockets, recordPhases),
					chromedp.Navigate(srv.URL+"/"),
					chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('waitroom:lang', %q)`, lang.code)),
				)
				step(t, tab, "open the room: the widget solves", chromedp.Navigate(srv.URL+"/s/"+id),
					chromedp.WaitVisible(chromedp.CSS(`[data-testid="pow"] altcha-widget`)))
				screenshot(t, tab, "pow-entry-"+lang.code+".png")
				step(t, tab, "joined the line", until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout))
				got := readRoom(t, tab, id)
				screenshot(t, tab, "pow-waiting-"+lang.code+".png")
				entry := slices.Index(got.Phases, "entry")
				if entry < 0 || slices.Index(got.Phases[entry:], "waiting") < 0 {
					t.Errorf("phases %v, want the entry view, then waiting", got.Phases)
				}
				if got.Lang != lang.code || got.Heading != lang.heading || got.Status != lang.solved || got.Widget != lang.verified {
					t.Errorf("in %s: lang %q, heading %q, status %q, widget %q; want %q, %q, %q, %q", lang.code,
						got.Lang, got.Heading, got.Status, got.Widget, lang.code, lang.heading, lang.solved, lang.verified)
				}
				if n, repeated := altchaSockets(got.Sockets); got.Challenges != 1 || n != 1 || repeated {
					t.Errorf("%d challenges fetched, %d sockets with a solution (one sent twice: %v), want 1 and 1", got.Challenges, n, repeated)
				}
				if len(got.Token) != 32 || got.Total != "1" {
					t.Errorf("token %q, line of %s; want a token and a line of 1", got.Token, got.Total)
				}
				joined := readEntryCounts(t, srv)
				if d := (entryCounts{joined.OK - before.OK, joined.Kept - before.Kept, joined.Challenges - before.Challenges}); d != (entryCounts{1, 0, 1}) {
					t.Errorf("the server counted %+v on joining, want one challenge and one new place", d)
				}

				// A reload: the token has its place, so no widget, no challenge, no solution.
				step(t, tab, "reload", chromedp.Reload(),
					until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout))
				again := readRoom(t, tab, id)
				if slices.Contains(again.Phases, "entry") || again.Challenges != 0 || again.Widgets != 0 {
					t.Errorf("after the reload: phases %v, %d challenges, widget loaded %d times; want no entry, none, none",
						again.Phases, again.Challenges, again.Widgets)
				}
				if n, _ := altchaSockets(again.Sockets); n != 0 || again.Token != got.Token || again.Total != "1" {
					t.Errorf("after the reload: %d sockets with a solution, token %q, line of %s; want 0, %q, 1 (the place kept)",
						n, again.Token, again.Total, got.Token)
				}
				reloaded := readEntryCounts(t, srv)
				if d := (entryCounts{reloaded.OK - joined.OK, reloaded.Kept - joined.Kept, reloaded.Challenges - joined.Challenges}); d != (entryCounts{0, 1, 0}) {
					t.Errorf("the server counted %+v on the reload, want one place kept and nothing else", d)
				}

				// The turn: the seat map, and a booking.
				if code := srv.Admin(t, http.MethodPost, "/screenings/"+id+"/resume", nil, nil); code != http.StatusOK {
					t.Fatalf("resume %s: %d, want 200", id, code)
				}
				step(t, tab, "admitted, book A1",
					chromedp.WaitVisible(chromedp.CSS(`[data-seat="A1"]`)),
					chromedp.Click(chromedp.CSS(`[data-seat="A1"]`)),
					chromedp.WaitVisible(chromedp.CSS(`[data-testid="reserve"][aria-disabled="false"]`)),
					chromedp.Click(chromedp.CSS(`[data-testid="reserve"]`)),
					chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirmation"]`)),
				)
				confirmation := value(t, tab, "confirmation", chromedp.Text(chromedp.CSS(`[data-testid="confirmation"]`)))
				if !strings.Contains(confirmation, "A1") || !strings.Contains(confirmation, lang.booked) {
					t.Errorf("confirmation = %q, want %q and A1", confirmation, lang.booked)
				}
				screenshot(t, tab, "pow-booked-"+lang.code+".png")
			})
		}
	})
}

// TestBrowserPowSolveTime measures the widget's solve in Chromium at several costs, for docs/benchmarks.md:
// five solves each, from the widget's verify() to its verified event, a fresh challenge each (the fetch is
// in the figure), without the widget's minimum display time. It runs with WAITROOM_POW_BENCH=1:
//
//	WAITROOM_POW_BENCH=1 go test -count=1 -run PowSolveTime -v ./e2e/browser/
func TestBrowserPowSolveTime(t *testing.T) {
	if os.Getenv("WAITROOM_POW_BENCH") == "" {
		t.Skip("a measurement, not a check: set WAITROOM_POW_BENCH=1 to run it")
	}
	path := chromium(t)
	env := testenv.New(t, testenv.Embedded)
	srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
	saleScreening(t, srv, "bench", "Bench", 1, 1, 1)
	setPowCost(t, srv, "bench", 100)
	pause(t, srv, "bench")
	tab := newTab(t, path)
	step(t, tab, "open the room", chromedp.Navigate(srv.URL+"/s/bench"),
		until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout))
	const solve = `new Promise((resolve) => {
		const w = document.querySelector('altcha-widget');
		w.configure({minDuration: 0});
		w.addEventListener('verified', () => resolve(performance.now() - t0), {once: true});
		const t0 = performance.now();
		w.verify();
	})`
	workers := value(t, tab, "workers", chromedp.Evaluate[int](`document.querySelector('altcha-widget').getConfiguration().workers`))
	for _, cost := range []int{100, 1000, 5000, 20000} {
		setPowCost(t, srv, "bench", cost)
		var ms []float64
		for range 5 {
			sctx, cancel := context.WithTimeout(tab, 5*time.Minute)
			v, err := chromedp.Run(sctx, chromedp.Evaluate[float64](solve, chromedp.EvalAwaitPromise))
			cancel()
			if err != nil {
				t.Fatalf("solve at cost %d: %v", cost, err)
			}
			ms = append(ms, v)
		}
		sorted := slices.Sorted(slices.Values(ms))
		t.Logf("pow_cost %5d (pow.iterations 1000, %d workers): median %6.0f ms, solves %.0f ms", cost, workers, sorted[len(sorted)/2], ms)
	}
}
