// The waiting room page in Chromium: a rank that falls as the line moves, then the seat map and a booking;
// and the pre-queue's countdown before the sale opens.

package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// aheadTimeout bounds how long a client ahead in line may take to be admitted and to reserve.
const aheadTimeout = 60 * time.Second

// admitThenReserve is a client ahead of the browser: it waits for its pass, says so on admitted, waits for
// the gate, then reserves seat. It runs in its own goroutine, so it returns errors instead of failing the test.
func admitThenReserve(ctx context.Context, c *testenv.Socket, baseURL, seat string, admitted chan<- struct{}, gate <-chan struct{}) error {
	deadline := time.Now().Add(aheadTimeout)
	var pass string
	for pass == "" {
		_ = c.SetReadDeadline(deadline)
		var m testenv.Message
		if err := c.ReadJSON(&m); err != nil {
			return fmt.Errorf("waiting for admission: %w", err)
		}
		switch m.Type {
		case "admitted":
			pass = m.Pass
			admitted <- struct{}{}
		case "sold_out", "error":
			return fmt.Errorf("waiting for admission: got %+v", m)
		}
	}
	select {
	case <-gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	body, _ := json.Marshal(map[string][]string{"seats": {seat}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/api/screenings/demo/reservations", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reserve %s: %w", seat, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return fmt.Errorf("reserve %s: %d %v, want 201", seat, resp.StatusCode, out)
	}
	return nil
}

// TestBrowserWaitsSeesTheLineMoveAndBooks drives the real page in Chromium: it joins a line behind two
// clients, shows a rank that falls as they book, is admitted to the seat map with their seats shown as
// sold, and books an available seat.
func TestBrowserWaitsSeesTheLineMoveAndBooks(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMISSION_INTERVAL":   "500ms",
			"WAITROOM_ADMISSION_BATCH_SIZE": "1",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		})
		// The browser starts before the line forms, so its start-up time does not race the admission ticks.
		tab := newTab(t, path)

		// Two clients ahead in line. Each reserves as soon as it is admitted and the browser has been seen
		// waiting (the gate), so the browser is sure to see its rank fall rather than skip past it.
		gate := make(chan struct{})
		admitted := make(chan struct{}, 2)
		aheadCtx, stopAhead := context.WithCancel(context.Background())
		results := make(chan error, 2)
		var ahead sync.WaitGroup
		t.Cleanup(func() { // runs after the clients' sockets are closed (cleanups run last first)
			stopAhead()
			ahead.Wait()
		})
		sold := []string{"A1", "A2"}
		for _, seat := range sold {
			c := srv.Dial(t, "demo", "")
			if q := c.Next(t, 5*time.Second); q.Type != "queued" {
				t.Fatalf("client for %s: first message %+v, want queued", seat, q)
			}
			ahead.Add(1)
			go func() {
				defer ahead.Done()
				results <- admitThenReserve(aheadCtx, c, srv.URL, seat, admitted, gate)
			}()
		}
		// The first client holds the only active slot until the gate opens, so the browser joins behind
		// the second at rank 2 and stays there until then.
		select {
		case <-admitted:
		case <-time.After(aheadTimeout):
			t.Fatal("the first client was not admitted")
		}

		// The waiting room on a 375-px-wide phone.
		step(t, tab, "open the waiting room",
			chromedp.EmulateViewport(375, 800),
			chromedp.Navigate(srv.URL+"/s/demo"),
		)
		if lang := value(t, tab, "page language", chromedp.Evaluate[string](`document.documentElement.lang`)); lang != "en" {
			t.Fatalf("page language = %q, want en (the browser runs with --lang=en-US)", lang)
		}
		const firstRank = 2
		step(t, tab, "rank shown", chromedp.Poll[chromedp.Void](
			`document.querySelector('[data-testid="rank"]').dataset.rank !== ''`,
			chromedp.WithPollingTimeout(stepTimeout)))
		step(t, tab, "connection shown as live", chromedp.WaitVisible(chromedp.CSS(`[data-testid="status"][data-conn="open"]`)))
		type place struct{ Rank, Total, RankText, TotalText string }
		got := value(t, tab, "place in line", chromedp.Evaluate[place](`(() => {
			const r = document.querySelector('[data-testid="rank"]'), n = document.querySelector('[data-testid="total"]');
			return {Rank: r.dataset.rank, Total: n.dataset.total, RankText: r.textContent, TotalText: n.textContent};
		})()`))
		if want := (place{"2", "2", "2nd", "2"}); got != want {
			t.Errorf("place in line = %+v, want %+v (one client admitted, one waiting ahead)", got, want)
		}
		screenshot(t, tab, "room-waiting-375.png")
		checkA11y(t, tab, "the waiting view at 375 px")

		// The line moves: the clients ahead book, and the rank falls.
		step(t, tab, "desktop viewport", chromedp.EmulateViewport(1280, 1000))
		close(gate)
		lower := value(t, tab, "rank falls", chromedp.Poll[int](
			fmt.Sprintf(`(() => { const r = Number(document.querySelector('[data-testid="rank"]').dataset.rank); return r > 0 && r < %d ? r : 0; })()`, firstRank),
			chromedp.WithPollingTimeout(aheadTimeout)))
		t.Logf("rank went from %d to %d", firstRank, lower)
		// The position that lowered the rank followed an admission, so the server knew the pace and sent a
		// wait estimate, which the page put into words (it keeps the figure once the view moves on).
		type estimate struct{ Seconds, Text string }
		eta := value(t, tab, "wait estimate", chromedp.Evaluate[estimate](`(() => {
			const e = document.querySelector('[data-testid="eta"]');
			return {Seconds: e.dataset.etaSeconds, Text: e.textContent};
		})()`))
		if n, err := strconv.Atoi(eta.Seconds); err != nil || n < 1 ||
			(eta.Text != "Estimated wait: less than a minute" && !strings.HasPrefix(eta.Text, "Estimated wait: about ")) {
			t.Errorf("wait estimate = %+v, want eta_seconds ≥ 1 shown as \"Estimated wait: …\"", eta)
		}

		// Admitted: the seat map, with the seats the clients booked shown as sold.
		step(t, tab, "seat map", chromedp.WaitVisible(chromedp.CSS(`[data-seat="A1"]`)))
		for range sold {
			select {
			case err := <-results:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(aheadTimeout):
				t.Fatal("a client ahead did not finish")
			}
		}
		for _, seat := range sold {
			disabled := value(t, tab, "seat "+seat, chromedp.Evaluate[bool](
				fmt.Sprintf(`document.querySelector('[data-seat=%q]').disabled`, seat)))
			if !disabled {
				t.Errorf("seat %s (sold) is not disabled", seat)
			}
		}
		seat := value(t, tab, "an available seat", chromedp.Evaluate[string](
			`document.querySelector('[data-seat]:not([disabled])').dataset.seat`))
		if seat == "A1" || seat == "A2" {
			t.Fatalf("available seat = %s, which was sold", seat)
		}
		step(t, tab, "choose "+seat,
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-seat=%q]`, seat))),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`[data-seat=%q][aria-pressed="true"]`, seat))),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="reserve"][aria-disabled="false"]`)),
		)
		screenshot(t, tab, "room-seatmap.png")
		checkA11y(t, tab, "the seat map with a seat chosen")

		// Book it.
		step(t, tab, "reserve",
			chromedp.Click(chromedp.CSS(`[data-testid="reserve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirmation"]`)),
		)
		confirmation := value(t, tab, "confirmation", chromedp.Text(chromedp.CSS(`[data-testid="confirmation"]`)))
		if !strings.Contains(confirmation, seat) {
			t.Errorf("confirmation = %q, want it to name %s", confirmation, seat)
		}
		screenshot(t, tab, "room-confirmation.png")
		checkA11y(t, tab, "the confirmation")

		var seats []map[string]any
		srv.GetJSON(t, "/api/screenings/demo/seats", &seats)
		for _, s := range seats {
			if s["id"] == seat && s["status"] != "sold" {
				t.Errorf("seat %s after booking in the browser: %v, want sold", seat, s["status"])
			}
		}
	})
}

// preQueueLead is how far ahead of the page the sale of the pre-queue test opens: time to load the page and
// connect before the opening (the browser is started and warm by then).
const preQueueLead = 4 * time.Second

// TestBrowserPreQueueCountsDownThenShowsARank opens the room of a screening whose sale opens in a few
// seconds: the page counts down to the opening, says that arriving early gives no advantage, shows the
// operator's pause, then shows the place drawn at the opening, and is admitted once the operator resumes.
func TestBrowserPreQueueCountsDownThenShowsARank(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":          apptest.AdminKey,
			"WAITROOM_ADMISSION_INTERVAL": "500ms",
		})
		tab := newTab(t, path)
		step(t, tab, "warm up the browser", chromedp.Navigate(srv.URL+"/"))

		// The sale opens on a whole second, so the time the page shows is exactly the one sent. Admission
		// is paused before anyone arrives, so after the opening the page waits with its rank instead of being
		// admitted at the first tick.
		opensAt := time.Now().Add(preQueueLead).Add(time.Second).Truncate(time.Second).UTC()
		if code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
			"id": "early", "name": "Opening night", "starts_at": opensAt.Add(2 * time.Hour), "sale_opens_at": opensAt,
			"rows": 2, "seats_per_row": 5,
		}, nil); code != http.StatusCreated {
			t.Fatalf("create the screening: %d, want 201", code)
		}
		if code := srv.Admin(t, http.MethodPost, "/screenings/early/pause", nil, nil); code != http.StatusOK {
			t.Fatalf("pause: %d, want 200", code)
		}

		step(t, tab, "open the room before the opening",
			chromedp.EmulateViewport(375, 800),
			chromedp.Navigate(srv.URL+"/s/early"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="prequeue"]`)),
		)
		type before struct {
			Countdown, OpensAtMs, Total, Fair, Notice string
			NoticeShown, RankShown                    bool
		}
		got := value(t, tab, "the pre-queue view", chromedp.Evaluate[before](`(() => {
			const q = (s) => document.querySelector(s);
			return {
				Countdown: q('[data-testid="countdown"]').textContent,
				OpensAtMs: q('[data-testid="countdown"]').dataset.opensAt,
				Total: q('[data-testid="prequeue-total"]').dataset.total,
				Fair: q('.notice.fair').textContent,
				Notice: q('[data-testid="paused-notice"]').textContent,
				NoticeShown: !q('[data-testid="paused-notice"]').hidden,
				RankShown: !q('#view-waiting').hidden,
			};
		})()`))
		screenshot(t, tab, "room-prequeue-375.png")
		checkA11y(t, tab, "the pre-queue at 375 px")
		if name := accessibleName(t, tab, `[data-testid="countdown"]`); name != "Time until the sale opens" {
			t.Errorf("the countdown's accessible name = %q, want \"Time until the sale opens\"", name)
		}
		if ok, _ := regexp.MatchString(`^(\d+:)?\d\d:\d\d$`, got.Countdown); !ok && time.Now().Before(opensAt) {
			t.Errorf("countdown = %q before the opening, want mm:ss", got.Countdown)
		}
		if want := strconv.FormatInt(opensAt.UnixMilli(), 10); got.OpensAtMs != want {
			t.Errorf("countdown counts to %s, want %s (sale_opens_at)", got.OpensAtMs, want)
		}
		if got.Total != "1" {
			t.Errorf("pre-queue size shown = %q, want 1", got.Total)
		}
		if !strings.Contains(got.Fair, "random place") || !strings.Contains(got.Fair, "no advantage") {
			t.Errorf("fairness note = %q, want it to say places are drawn at random and arriving early gives no advantage", got.Fair)
		}
		if !got.NoticeShown || !strings.Contains(got.Notice, "paused") {
			t.Errorf("paused notice = %q (shown %v), want it shown: the prequeue message said paused", got.Notice, got.NoticeShown)
		}
		if got.RankShown {
			t.Error("a rank is shown before the opening")
		}
		token := value(t, tab, "stored token", chromedp.Evaluate[string](
			`(JSON.parse(localStorage.getItem('waitroom:room:early') || '{}').token || '')`))
		if ok, _ := regexp.MatchString(`^[0-9a-f]{32}$`, token); !ok {
			t.Errorf("stored token = %q, want the prequeue message's token kept like a queued one", token)
		}

		// The opening: the page leaves the countdown for the place drawn at the opening.
		step(t, tab, "rank after the opening", chromedp.Poll[chromedp.Void](
			`document.querySelector('[data-testid="rank"]').dataset.rank !== '' && !document.querySelector('#view-waiting').hidden`,
			chromedp.WithPollingTimeout(aheadTimeout)))
		type after struct {
			Rank, Total                string
			PreShown, NoticeShown, ETA bool
		}
		place := value(t, tab, "place after the opening", chromedp.Evaluate[after](`(() => {
			const q = (s) => document.querySelector(s);
			return {
				Rank: q('[data-testid="rank"]').dataset.rank, Total: q('[data-testid="total"]').dataset.total,
				PreShown: !q('[data-testid="prequeue"]').hidden, NoticeShown: !q('[data-testid="paused-notice"]').hidden,
				ETA: !q('[data-testid="eta"]').hidden,
			};
		})()`))
		if want := (after{Rank: "1", Total: "1", NoticeShown: true}); place != want {
			t.Errorf("after the opening = %+v, want %+v (alone in line, still paused, no estimate)", place, want)
		}
		screenshot(t, tab, "room-opened-paused-375.png")
		checkA11y(t, tab, "the waiting view, paused, at 375 px")

		// The operator resumes: the notice goes and the page is admitted.
		if code := srv.Admin(t, http.MethodPost, "/screenings/early/resume", nil, nil); code != http.StatusOK {
			t.Fatalf("resume: %d, want 200", code)
		}
		step(t, tab, "admitted after resuming", chromedp.WaitVisible(chromedp.CSS(`[data-seat="A1"]`)))
		if shown := value(t, tab, "paused notice", chromedp.Evaluate[bool](`!document.querySelector('[data-testid="paused-notice"]').hidden`)); shown {
			t.Error("the paused notice is still shown after resuming")
		}
	})
}
