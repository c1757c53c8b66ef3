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

		// Two clients ahead in line. Each reserves once it is admitted and its gate opens: the first's once
		// the browser has been seen waiting, the second's once the browser has seen its rank fall. Opened
		// together, the second would be admitted and reserve within milliseconds of the first, and the
		// browser, admitted next, would be sent no rank in between: the rank pace (hub.rank_interval) sends
		// the newest line once per interval, and in that line the browser is admitted already.
		gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
		admitted := make(chan struct{}, 2)
		aheadCtx, stopAhead := context.WithCancel(context.Background())
		results := make(chan error, 2)
		var ahead sync.WaitGroup
		t.Cleanup(func() { // runs after the clients' sockets are closed (cleanups run last first)
			stopAhead()
			ahead.Wait()
		})
		sold := []string{"A1", "A2"}
		for i, seat := range sold {
			c := srv.Dial(t, "demo", "")
			if q := c.Next(t, 5*time.Second); q.Type != "queued" {
				t.Fatalf("client for %s: first message %+v, want queued", seat, q)
			}
			ahead.Add(1)
			go func() {
				defer ahead.Done()
				results <- admitThenReserve(aheadCtx, c, srv.URL, seat, admitted, gates[i])
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
		close(gates[0])
		lower := value(t, tab, "rank falls", chromedp.Poll[int](
			fmt.Sprintf(`(() => { const r = Number(document.querySelector('[data-testid="rank"]').dataset.rank); return r > 0 && r < %d ? r : 0; })()`, firstRank),
			chromedp.WithPollingTimeout(aheadTimeout)))
		t.Logf("rank went from %d to %d", firstRank, lower)
		close(gates[1])
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

// TestBrowserSaleEndsInWordsOfItsOwn: a sale the operator closed and a sale whose every seat was sold each
// end the room with words of their own (closing sells nothing, so it never says sold out), and the list
// offers neither's line, in English and in Korean.
func TestBrowserSaleEndsInWordsOfItsOwn(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
		tab := newTab(t, path)
		saleScreening(t, srv, "shut", "Closed early", 2, 5, 10)
		saleScreening(t, srv, "gone", "Two seats", 1, 2, 10)

		// The operator closes a sale while the page is admitted to it.
		openAdmitted(t, tab, srv, "shut")
		if code := srv.Admin(t, http.MethodPost, "/screenings/shut/close", nil, nil); code != http.StatusOK {
			t.Fatalf("close: %d, want 200", code)
		}
		step(t, tab, "the room says the sale is closed", until(`document.querySelector('[data-testid="final"]').dataset.kind !== ''`, stepTimeout))
		type final struct{ Kind, Heading, Text string }
		readFinal := chromedp.Evaluate[final](`(() => {
			const f = document.querySelector('[data-testid="final"]');
			return {Kind: f.dataset.kind, Heading: f.querySelector('h2').textContent.trim(), Text: f.querySelector('#final-text').textContent};
		})()`)
		closed := value(t, tab, "the closed room", readFinal)
		if closed.Kind != "closed" || closed.Heading != "The sale is closed" || strings.Contains(closed.Text, "been sold") {
			t.Errorf("after the operator closed the sale the room shows %+v, want kind closed, \"The sale is closed\", and no word of seats sold", closed)
		}
		if name := accessibleName(t, tab, `#final-heading`); name != "The sale is closed" {
			t.Errorf("the closed heading's accessible name = %q, want the words alone (its mark hidden)", name)
		}
		screenshot(t, tab, "room-closed.png")
		checkA11y(t, tab, "the room of a closed sale")

		// The last seats are sold while the page is in the room.
		pass, _ := admittedPass(t, srv, "gone")
		openAdmitted(t, tab, srv, "gone")
		if code, body := srv.Reserve(t, "gone", pass, "A1", "A2"); code != http.StatusCreated {
			t.Fatalf("reserve the last seats: %d %v, want 201", code, body)
		}
		step(t, tab, "the room says sold out", until(`document.querySelector('[data-testid="final"]').dataset.kind !== ''`, stepTimeout))
		sold := value(t, tab, "the sold-out room", readFinal)
		if sold.Kind != "sold_out" || sold.Heading != "Sold out" {
			t.Errorf("after the last seat sold the room shows %+v, want kind sold_out, \"Sold out\"", sold)
		}
		checkA11y(t, tab, "the room of a sold-out sale")

		// The list: each in its words, with no line to join; the demo still on sale.
		step(t, tab, "the list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-screening="gone"]`)))
		type listed struct {
			State, Badge, Text string
			Join               bool
		}
		readCard := func(id string) listed {
			return value(t, tab, "the card of "+id, chromedp.Evaluate[listed](fmt.Sprintf(`(() => {
				const c = document.querySelector('[data-screening=%q]');
				const b = c.querySelector('[data-testid="state"]');
				return {State: b.dataset.state, Badge: b.textContent, Text: c.textContent, Join: !!c.querySelector('.actions a')};
			})()`, id)))
		}
		if got := readCard("shut"); got.State != "closed" || got.Badge != "Sale closed" || got.Join || !strings.Contains(got.Text, "closed the sale") {
			t.Errorf("the closed sale on the list: %+v, want state closed, \"Sale closed\", no join link", got)
		}
		if got := readCard("gone"); got.State != "sold_out" || got.Badge != "Sold out" || got.Join {
			t.Errorf("the sold-out sale on the list: %+v, want state sold_out, \"Sold out\", no join link", got)
		}
		if got := readCard("demo"); got.State != "on_sale" || !got.Join {
			t.Errorf("the demo on the list: %+v, want on sale with a join link", got)
		}
		screenshot(t, tab, "list-ended.png")
		checkA11y(t, tab, "the list with ended sales")

		step(t, tab, "in Korean", chromedp.Click(chromedp.ID("lang-switch")), until(`document.documentElement.lang === 'ko'`, stepTimeout))
		if got := readCard("shut"); got.Badge != "판매 종료" || !strings.Contains(got.Text, "마감") {
			t.Errorf("the closed sale in Korean: %+v, want \"판매 종료\" and words of the sale closed", got)
		}
		if got := readCard("gone"); got.Badge != "매진" {
			t.Errorf("the sold-out sale in Korean: %+v, want \"매진\"", got)
		}
		checkA11y(t, tab, "the list in Korean")
	})
}

// TestBrowserSeatMapFollowsTheSale: seats someone else takes show on an admitted page's map without a
// reload, and a seat the page had chosen leaves its choice with a word why, focus kept on the map.
func TestBrowserSeatMapFollowsTheSale(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMISSION_INTERVAL": "200ms"})
		tab := newTab(t, path)
		pass, _ := admittedPass(t, srv, "demo")
		openAdmitted(t, tab, srv, "demo")
		step(t, tab, "choose B2 then B1",
			chromedp.Click(chromedp.CSS(`[data-seat="B2"]`)),
			chromedp.Click(chromedp.CSS(`[data-seat="B1"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-seat="B1"][aria-pressed="true"]`)),
		)
		if code, body := srv.Reserve(t, "demo", pass, "B1", "C3"); code != http.StatusCreated {
			t.Fatalf("another buyer reserves B1 and C3: %d %v, want 201", code, body)
		}
		step(t, tab, "the map shows B1 and C3 taken", until(
			`document.querySelector('[data-seat="B1"]').disabled && document.querySelector('[data-seat="C3"]').disabled`, stepTimeout))
		type after struct {
			B1Pressed, B2Pressed, B1Name, C3Name, Note, Focus string
		}
		got := value(t, tab, "the map after", chromedp.Evaluate[after](`(() => {
			const q = (s) => document.querySelector(s);
			const a = document.activeElement;
			return {
				B1Pressed: String(q('[data-seat="B1"]').getAttribute('aria-pressed')),
				B2Pressed: String(q('[data-seat="B2"]').getAttribute('aria-pressed')),
				B1Name: q('[data-seat="B1"]').getAttribute('aria-label'),
				C3Name: q('[data-seat="C3"]').getAttribute('aria-label'),
				Note: q('[data-testid="seat-changes"]').textContent,
				Focus: a ? (a.dataset.seat || a.id || a.tagName) : '',
			};
		})()`))
		if got.B1Pressed != "null" || got.B2Pressed != "true" {
			t.Errorf("pressed after B1 was taken: B1 %s, B2 %s; want B1 out of the choice, B2 still in", got.B1Pressed, got.B2Pressed)
		}
		for seat, name := range map[string]string{"B1": got.B1Name, "C3": got.C3Name} {
			if !strings.HasPrefix(name, seat[1:]+", row "+seat[:1]+", ") || !(strings.HasSuffix(name, "sold") || strings.Contains(name, "held")) {
				t.Errorf("%s's name after it was taken = %q, want \"%s, row %s, sold\" (or held)", seat, name, seat[1:], seat[:1])
			}
		}
		if !strings.Contains(got.Note, "B1") || strings.Contains(got.Note, "B2") {
			t.Errorf("the note beside the map = %q, want it to say B1 left the choice", got.Note)
		}
		if got.Focus == "BODY" || got.Focus == "" {
			t.Errorf("focus after the chosen seat was taken = %q, want it kept on the map", got.Focus)
		}
		screenshot(t, tab, "room-seat-taken-live.png")
		checkA11y(t, tab, "the seat map after a live change")
	})
}

// TestBrowserSeatMapFitsA320PixelScreen: on a 320-px-wide phone the seat map stays inside its box with every
// row letter in view, each seat's name starts with the number it shows, and the timer has a name.
func TestBrowserSeatMapFitsA320PixelScreen(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMISSION_INTERVAL": "200ms"})
		tab := newTab(t, path)
		step(t, tab, "a 320-px screen", chromedp.EmulateViewport(320, 640))
		openAdmitted(t, tab, srv, "demo")
		type box struct {
			PageWidth, ViewWidth               int
			WrapLeft, WrapRight, CardRight     float64
			WrapScroll, WrapClient             int
			HiddenLabels, OutsideSeats, Labels []string
			SmallestSeat                       float64
		}
		got := value(t, tab, "the seat map's geometry", chromedp.Evaluate[box](`(() => {
			const wrap = document.querySelector('[data-testid="seatmap-wrap"]').getBoundingClientRect();
			const card = document.querySelector('#view-admitted').getBoundingClientRect();
			const w = document.querySelector('[data-testid="seatmap-wrap"]');
			const labels = [...document.querySelectorAll('.seat-row .row-label:not(.end)')];
			const inside = (r) => r.width > 0 && r.left >= wrap.left - 0.5 && r.right <= wrap.right + 0.5;
			const seats = [...document.querySelectorAll('[data-seat]')];
			return {
				PageWidth: document.documentElement.scrollWidth, ViewWidth: window.innerWidth,
				WrapLeft: wrap.left, WrapRight: wrap.right, CardRight: card.right,
				WrapScroll: w.scrollWidth, WrapClient: w.clientWidth,
				Labels: labels.map((l) => l.textContent),
				HiddenLabels: labels.filter((l) => !inside(l.getBoundingClientRect())).map((l) => l.textContent),
				OutsideSeats: seats.filter((s) => !inside(s.getBoundingClientRect())).map((s) => s.dataset.seat),
				SmallestSeat: Math.min(...seats.map((s) => s.getBoundingClientRect().width)),
			};
		})()`))
		if got.PageWidth > got.ViewWidth {
			t.Errorf("page width at 320 px = %d, want no wider than the screen (%d)", got.PageWidth, got.ViewWidth)
		}
		if got.WrapRight > got.CardRight {
			t.Errorf("the seat map ends at %.1f px, past its box (%.1f)", got.WrapRight, got.CardRight)
		}
		if len(got.Labels) != 10 || len(got.HiddenLabels) > 0 {
			t.Errorf("row letters %v, cut off %v; want A to J, all in view", got.Labels, got.HiddenLabels)
		}
		if len(got.OutsideSeats) > 0 || got.WrapScroll > got.WrapClient {
			t.Errorf("seats outside the box %v (scroll %d of %d); want ten seats a row to fit at 320 px", got.OutsideSeats, got.WrapScroll, got.WrapClient)
		}
		if got.SmallestSeat < 24 {
			t.Errorf("smallest seat %.1f px wide, want at least 24 px to tap (WCAG 2.5.8)", got.SmallestSeat)
		}
		if name := accessibleName(t, tab, `[data-seat="E5"]`); name != "5, row E, available" {
			t.Errorf("seat E5's accessible name = %q, want \"5, row E, available\" (the number it shows first)", name)
		}
		if name := accessibleName(t, tab, `#timer`); name != "Time left to book" {
			t.Errorf("the timer's accessible name = %q, want \"Time left to book\"", name)
		}
		step(t, tab, "choose E5", chromedp.Click(chromedp.CSS(`[data-seat="E5"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-seat="E5"][aria-pressed="true"]`)))
		if name := accessibleName(t, tab, `[data-seat="E5"]`); name != "5, row E, selected" {
			t.Errorf("chosen seat E5's accessible name = %q, want \"5, row E, selected\" (no check mark read out)", name)
		}
		screenshot(t, tab, "room-seatmap-320.png")
		checkA11y(t, tab, "the seat map at 320 px")
	})
}

// TestBrowserLeaveAsksFirst: "Leave the line" asks in a dialog that starts on staying; Escape keeps the
// place and focus comes back to the button; only the confirmation gives the place up. While the line has
// not moved, the waiting view says there is no estimate yet.
func TestBrowserLeaveAsksFirst(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMISSION_INTERVAL":   "200ms",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		})
		tab := newTab(t, path)
		admittedPass(t, srv, "demo") // holds the only slot: the page waits first in line
		step(t, tab, "wait in line",
			chromedp.Navigate(srv.URL+"/s/demo"),
			until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1' && !document.querySelector('#view-waiting').hidden`, stepTimeout),
		)
		noETA := value(t, tab, "no estimate", chromedp.Evaluate[string](`(() => {
			const e = document.querySelector('[data-testid="eta-none"]');
			return e.hidden ? '' : e.textContent;
		})()`))
		if !strings.HasPrefix(noETA, "No wait estimate yet") {
			t.Errorf("the waiting view without an estimate says %q, want \"No wait estimate yet…\"", noETA)
		}
		checkA11y(t, tab, "the waiting view without an estimate")

		type asked struct {
			Open, Waiting bool
			Focus, Text   string
		}
		readAsked := chromedp.Evaluate[asked](`(() => ({
			Open: document.querySelector('[data-testid="leave-dialog"]').open,
			Waiting: !document.querySelector('#view-waiting').hidden,
			Focus: document.activeElement ? document.activeElement.id : '',
			Text: document.querySelector('#leave-text').textContent,
		}))()`)
		step(t, tab, "ask to leave", chromedp.Click(chromedp.ID("leave")), until(`document.querySelector('[data-testid="leave-dialog"]').open`, stepTimeout))
		if got := value(t, tab, "the question", readAsked); !got.Open || !got.Waiting || got.Focus != "leave-stay" || !strings.Contains(got.Text, "1st in line") {
			t.Errorf("after \"Leave the line\": %+v, want the dialog open on \"Stay in line\" naming the place, still waiting", got)
		}
		screenshot(t, tab, "room-leave-asked.png")
		checkA11y(t, tab, "the question before leaving")

		step(t, tab, "Escape stays", chromedp.KeyEvent("\x1b"), until(`!document.querySelector('[data-testid="leave-dialog"]').open`, stepTimeout))
		if got := value(t, tab, "after Escape", readAsked); got.Open || !got.Waiting || got.Focus != "leave" {
			t.Errorf("after Escape: %+v, want the dialog closed, still waiting, focus back on the leave button", got)
		}
		token := value(t, tab, "stored token", chromedp.Evaluate[string](`JSON.parse(localStorage.getItem('waitroom:room:demo') || '{}').token || ''`))

		step(t, tab, "leave, confirmed",
			chromedp.Click(chromedp.ID("leave")),
			until(`document.querySelector('[data-testid="leave-dialog"]').open`, stepTimeout),
			chromedp.Click(chromedp.CSS(`[data-testid="leave-confirm"]`)),
			until(`document.querySelector('[data-testid="final"]').dataset.kind === 'left'`, stepTimeout),
		)
		var status map[string]any
		deadline := time.Now().Add(stepTimeout)
		for {
			srv.GetJSON(t, "/api/screenings/demo/queue/"+token, &status)
			if status["status"] == "unknown" || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if status["status"] != "unknown" {
			t.Errorf("the token after leaving stands %v, want unknown (left the line)", status)
		}
		checkA11y(t, tab, "the room after leaving")
	})
}

// TestBrowserFailedReserveKeepsFocus: a reservation the server refuses says why and moves focus to the
// words, not to the page's body; the seats picked on the map then book, with the ticket's link.
func TestBrowserFailedReserveKeepsFocus(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
		// The refusal is the server's answer to a best-available count it cannot fill.
		tab := newTab(t, path, networkStatus(http.StatusConflict), networkStatus(http.StatusBadRequest))
		saleScreening(t, srv, "few", "Three seats", 1, 3, 10)
		pass, _ := admittedPass(t, srv, "few")
		if code, body := srv.Reserve(t, "few", pass, "A1", "A2"); code != http.StatusCreated {
			t.Fatalf("another buyer reserves A1 and A2: %d %v, want 201", code, body)
		}
		openAdmitted(t, tab, srv, "few")
		step(t, tab, "ask for the best 2 seats",
			chromedp.SetValue(chromedp.CSS(`[data-testid="best-count"]`), "2"),
			chromedp.Click(chromedp.CSS(`[data-testid="best-submit"]`)),
			until(`document.querySelector('[data-testid="message"]').textContent !== ''`, stepTimeout),
		)
		type refusal struct{ Message, Focus string }
		got := value(t, tab, "the refusal", chromedp.Evaluate[refusal](`({
			Message: document.querySelector('[data-testid="message"]').textContent,
			Focus: document.activeElement ? (document.activeElement.dataset.testid || document.activeElement.tagName) : '',
		})`))
		if got.Focus != "message" {
			t.Errorf("focus after the refused reservation (%q) = %q, want the message", got.Message, got.Focus)
		}
		if !strings.Contains(got.Message, "Fewer than 2 seats are free") {
			t.Errorf("the refusal of 2 best seats with 1 free says %q, want \"Fewer than 2 seats are free…\" (409 NOT_ENOUGH_SEATS)", got.Message)
		}
		screenshot(t, tab, "room-refused.png")
		checkA11y(t, tab, "the seat map after a refused reservation")

		step(t, tab, "book A3",
			chromedp.Click(chromedp.CSS(`[data-seat="A3"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="reserve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirmation"][data-status="confirmed"]`)),
		)
		type booked struct{ Heading, Ticket, Code string }
		b := value(t, tab, "the booking", chromedp.Evaluate[booked](`(() => {
			const l = document.querySelector('[data-testid="ticket-link"]');
			return {
				Heading: document.querySelector('#confirmed-title').textContent,
				Ticket: l.hidden ? '' : l.getAttribute('href'),
				Code: (JSON.parse(localStorage.getItem('waitroom:room:few') || '{}').reservation || {}).code || '',
			};
		})()`))
		if b.Heading != "Booked" || b.Code == "" || !strings.HasSuffix(b.Ticket, "/t/"+b.Code) {
			t.Errorf("the booking shows %+v, want \"Booked\" with a link to its ticket /t/{code}", b)
		}
		checkA11y(t, tab, "the booking with its ticket")
	})
}

// TestBrowserHoldModeShowsTheHoldAndTheCheckout: with checkout in hold mode a reservation holds its seats
// until a time: the room says so to the second with a named countdown, links the checkout and the order,
// and a page waiting behind a sale whose every seat is held hears that the wait goes on with no estimate.
func TestBrowserHoldModeShowsTheHoldAndTheCheckout(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":             apptest.AdminKey,
			"WAITROOM_BOOKING_CHECKOUT":      "hold",
			"WAITROOM_BOOKING_DEMO_CHECKOUT": "true",
		})
		tab := newTab(t, path)
		saleScreening(t, srv, "pay", "Pay later", 1, 3, 2)
		openAdmitted(t, tab, srv, "pay")
		step(t, tab, "hold A2",
			chromedp.Click(chromedp.CSS(`[data-seat="A2"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="reserve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirmation"]`)),
		)
		type held struct{ Status, Heading, Timer, Checkout, Ticket, CodeText, Code string }
		got := value(t, tab, "the hold", chromedp.Evaluate[held](`(() => {
			const q = (s) => document.querySelector(s);
			const href = (s) => q(s).hidden ? '' : q(s).getAttribute('href');
			return {
				Status: q('[data-testid="confirmation"]').dataset.status,
				Heading: q('#confirmed-title').textContent,
				Timer: q('[data-testid="hold-timer-box"]').hidden ? '' : q('[data-testid="hold-timer"]').textContent,
				Checkout: href('[data-testid="checkout-link"]'), Ticket: href('[data-testid="ticket-link"]'),
				CodeText: q('[data-testid="order-code"]').textContent,
				Code: (JSON.parse(localStorage.getItem('waitroom:room:pay') || '{}').reservation || {}).code || '',
			};
		})()`))
		if got.Status != "held" {
			t.Fatalf("the order in hold mode shows %+v, want status held", got)
		}
		if ok, _ := regexp.MatchString(`^Seats held — pay before \d?\d:\d\d:\d\d [AP]M \S+$`, got.Heading); !ok {
			t.Errorf("the held order's heading = %q, want \"Seats held — pay before H:MM:SS AM {zone}\"", got.Heading)
		}
		if ok, _ := regexp.MatchString(`^\d\d:\d\d$`, got.Timer); !ok {
			t.Errorf("the hold's countdown = %q, want mm:ss", got.Timer)
		}
		if got.Code == "" || !strings.HasSuffix(got.Checkout, "/checkout/"+got.Code) || !strings.HasSuffix(got.Ticket, "/t/"+got.Code) ||
			!strings.Contains(got.CodeText, got.Code) {
			t.Errorf("the held order links %+v, want its code shown, /checkout/{code} and /t/{code}", got)
		}
		if name := accessibleName(t, tab, `[data-testid="hold-timer"]`); name != "Time left to pay" {
			t.Errorf("the hold's countdown is named %q, want \"Time left to pay\"", name)
		}
		screenshot(t, tab, "room-held.png")
		checkA11y(t, tab, "the held order")

		// Every other seat held too: a page that comes to the line now waits with no estimate promised.
		pass, _ := admittedPass(t, srv, "pay")
		if code, body := srv.Reserve(t, "pay", pass, "A1", "A3"); code != http.StatusCreated {
			t.Fatalf("hold the other seats: %d %v, want 201", code, body)
		}
		other := newTab(t, path)
		step(t, other, "wait behind held seats",
			chromedp.Navigate(srv.URL+"/s/pay"),
			until(`!document.querySelector('[data-testid="all-held"]').hidden`, stepTimeout),
		)
		type waiting struct{ Notice, Why string }
		w := value(t, other, "the wait", chromedp.Evaluate[waiting](`({
			Notice: document.querySelector('[data-testid="all-held"]').textContent,
			Why: document.querySelector('[data-testid="eta-none"]').dataset.why,
		})`))
		if !strings.Contains(w.Notice, "Every seat is held") || w.Why != "held" {
			t.Errorf("waiting while every seat is held: %+v, want the all-held notice and no estimate", w)
		}
		checkA11y(t, other, "the wait while every seat is held")
		step(t, other, "the list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-screening="pay"]`)))
		badge := value(t, other, "the list's badge", chromedp.Evaluate[string](`document.querySelector('[data-screening="pay"] [data-testid="state"]').textContent`))
		if badge != "All seats held" {
			t.Errorf("the all-held sale's badge on the list = %q, want \"All seats held\"", badge)
		}
		checkA11y(t, other, "the list with every seat of a sale held")
	})
}
