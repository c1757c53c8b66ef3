// The room page's access code in Chromium: a screening that requires one asks for it before a new place;
// a wrong or spent code is refused in words of the page's language and another may be tried, and a right
// one joins. With a proof of work asked too, the widget solves beside the code, and again after a refusal.

package browser

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// oneTimeCode is a one-time code as the admin API shows it: 12 characters of Crockford base32 in threes
// of four.
var oneTimeCode = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$`)

// makeCodes makes n one-time codes of the screening through the admin API.
func makeCodes(t *testing.T, srv *apptest.Server, id string, n int) []string {
	t.Helper()
	var out struct {
		Codes []string `json:"codes"`
	}
	if code := srv.Admin(t, http.MethodPost, "/screenings/"+id+"/codes", map[string]any{"count": n}, &out); code != http.StatusCreated {
		t.Fatalf("make %d codes of %s: %d, want 201", n, id, code)
	}
	if len(out.Codes) != n {
		t.Fatalf("made codes %v, want %d", out.Codes, n)
	}
	for _, c := range out.Codes {
		if !oneTimeCode.MatchString(c) {
			t.Errorf("code %q, want XXXX-XXXX-XXXX in Crockford base32", c)
		}
	}
	var pub map[string]any
	srv.GetJSON(t, "/api/screenings/"+id, &pub)
	if pub["code_required"] != true {
		t.Errorf("GET /api/screenings/%s code_required = %v after codes were made, want true", id, pub["code_required"])
	}
	return out.Codes
}

// tryCode types code into the room's field and sends it.
func tryCode(code string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		return chromedp.Do(ctx, fill(`#code-input`, code), chromedp.Click(chromedp.CSS(`[data-testid="code-submit"]`)))
	})
}

// refusedWith waits until the room shows a refusal of the code containing text, still asking for a code.
func refusedWith(text string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`(() => {
		const e = document.querySelector('[data-testid="code-error"]');
		return !e.hidden && e.textContent.includes(%q) && document.querySelector('#main').dataset.phase === 'entry';
	})()`, text), stepTimeout)
}

// TestBrowserAccessCodeRefusedThenAccepted: the room asks for a code and loads no widget (no proof of
// work asked); a wrong code and a code another place took are each refused in words of their own, the
// field keeping what was typed; a right one, typed in lower case with spaces, joins the line.
func TestBrowserAccessCodeRefusedThenAccepted(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
		saleScreening(t, srv, "vip", "Members' night", 2, 5, 1)
		pause(t, srv, "vip")
		codes := makeCodes(t, srv, "vip", 2)
		// Someone else takes the first code's place.
		other := testenv.DialHello(t, srv.URL+"/ws/screenings/vip", "", map[string]string{"code": codes[0]})
		if m, _ := other.Until(t, "queued", 10*time.Second); m.Rank != 1 {
			t.Fatalf("the other place with code %s: %+v, want queued at rank 1", codes[0], m)
		}

		tab := newTab(t, path)
		step(t, tab, "record the page", onNewDocument(recordSockets, recordPhases))
		step(t, tab, "open the room: it asks for a code", chromedp.Navigate(srv.URL+"/s/vip"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="code-form"]`)))
		if shown := value(t, tab, "the proof of work", chromedp.Evaluate[bool](`!document.querySelector('[data-testid="pow"]').hidden`)); shown {
			t.Error("the proof of work is shown, want only the code (pow_cost 0)")
		}
		if name := accessibleName(t, tab, `#code-input`); name != "Access code" {
			t.Errorf("the code field's accessible name = %q, want \"Access code\"", name)
		}
		checkA11y(t, tab, "the entry view with the code field")

		step(t, tab, "a wrong code", tryCode("zzzz-zzzz-zzzz"), refusedWith("not valid"))
		screenshot(t, tab, "code-invalid.png")
		if v := value(t, tab, "the field", chromedp.Evaluate[string](`document.querySelector('#code-input').value`)); v != "zzzz-zzzz-zzzz" {
			t.Errorf("the field holds %q after the refusal, want what was typed, to correct", v)
		}
		checkA11y(t, tab, "the entry view with a refused code")
		step(t, tab, "a code another place took", tryCode(codes[0]), refusedWith("already been used"))

		right := strings.ToLower(strings.ReplaceAll(codes[1], "-", " "))
		step(t, tab, "the right code, in lower case with spaces", tryCode(right),
			until(`document.querySelector('[data-testid="rank"]').dataset.rank === '2'`, stepTimeout))
		got := readRoom(t, tab, "vip")
		if got.Total != "2" || got.Widgets != 0 || len(got.Sockets) != 3 {
			t.Errorf("joined: line of %s, widget loaded %d times, %d sockets; want 2, 0, 3 (one per code tried)", got.Total, got.Widgets, len(got.Sockets))
		}
		screenshot(t, tab, "code-joined.png")
	})
}

// TestBrowserCodeAndProofOfWorkTogether, in Korean: the widget solves while the code is awaited; a wrong
// code sends the page back to the code and a fresh solve (a solution is never sent twice), and the right
// code joins.
func TestBrowserCodeAndProofOfWorkTogether(t *testing.T) {
	path := chromium(t)
	env := testenv.New(t, testenv.Embedded)
	srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
	saleScreening(t, srv, "both", "Members' proof night", 2, 5, 1)
	setPowCost(t, srv, "both", testPowCost)
	pause(t, srv, "both")
	codes := makeCodes(t, srv, "both", 1)

	tab := newTab(t, path)
	step(t, tab, "in Korean, record the page",
		onNewDocument(recordSockets, recordPhases),
		chromedp.Navigate(srv.URL+"/"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem('waitroom:lang', 'ko')`),
	)
	step(t, tab, "open the room: the widget solves, the code is awaited", chromedp.Navigate(srv.URL+"/s/both"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="code-form"]`)),
		until(`document.querySelector('[data-testid="pow-status"]').dataset.state === 'solved'`, stepTimeout))
	status := value(t, tab, "the proof of work's state", chromedp.Text(chromedp.CSS(`[data-testid="pow-status"]`)))
	if status != "확인되었습니다. 입장 코드를 입력하면 줄에 섭니다." {
		t.Errorf("solved before the code: status %q, want it to ask for the code in Korean", status)
	}
	screenshot(t, tab, "code-pow-ko.png")
	checkA11y(t, tab, "the entry view with the code and the widget, in Korean")

	step(t, tab, "a wrong code", tryCode("ZZZZ-ZZZZ-ZZZZ"), refusedWith("맞지 않는 코드"))
	step(t, tab, "the right code", tryCode(codes[0]),
		until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout))
	got := readRoom(t, tab, "both")
	if n, repeated := altchaSockets(got.Sockets); got.Challenges != 2 || n != 2 || repeated {
		t.Errorf("%d challenges fetched, %d sockets with a solution (one sent twice: %v), want 2 and 2: a fresh solve after the refusal",
			got.Challenges, n, repeated)
	}
}

// TestAdminBrowserSetsTheProofOfWorkAndMakesCodes: the control room shows a screening's proof of work as
// off and no code needed, sets the cost live from the admission form, makes one-time codes (shown to
// copy, and the screening needs a code from then on), exports them as CSV with the key, and lets everyone
// in without a code again.
func TestAdminBrowserSetsTheProofOfWorkAndMakesCodes(t *testing.T) {
	path := chromium(t)
	env := testenv.New(t, testenv.Embedded)
	srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
	saleScreening(t, srv, "ctl", "Control night", 2, 5, 1)
	// The page asks whether the admin API is on without a key first (a 401).
	tab := newTab(t, path, networkStatus(http.StatusUnauthorized))
	current := func(field string) string {
		return value(t, tab, "the current "+field, chromedp.Evaluate[string](fmt.Sprintf(
			`(() => { const d = document.querySelector('[data-testid="current-%s"]'); return d.dataset.value + '|' + d.textContent; })()`, field)))
	}
	step(t, tab, "sign in and pick ctl",
		chromedp.Navigate(srv.URL+"/admin#ctl"),
		chromedp.WaitVisible(chromedp.ID("admin-key")),
		chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
		chromedp.Click(chromedp.ID("login-submit")),
		until(`document.querySelector('[data-testid="current-pow_cost"]').dataset.value !== ''`, stepTimeout),
	)
	if pow, codes := current("pow_cost"), current("codes_required"); pow != "0|off" || codes != "false|not required" {
		t.Errorf("before: proof of work %q, codes %q; want 0|off and false|not required", pow, codes)
	}

	step(t, tab, "set the proof of work to 75",
		fill(`#adm-pow`, "75"),
		chromedp.Click(chromedp.CSS(`[data-testid="admission-submit"]`)),
		until(`document.querySelector('[data-testid="current-pow_cost"]').dataset.value === '75'`, stepTimeout),
	)
	var pub map[string]any
	if srv.GetJSON(t, "/api/screenings/ctl", &pub); pub["pow_cost"] != float64(75) {
		t.Errorf("the server's pow_cost after the form = %v, want 75", pub["pow_cost"])
	}

	step(t, tab, "make 3 codes",
		fill(`#codes-count`, "3"),
		chromedp.Click(chromedp.CSS(`[data-testid="codes-make"]`)),
		until(`document.querySelectorAll('[data-testid="codes-new"] li').length === 3`, stepTimeout),
		until(`document.querySelector('[data-testid="current-codes_required"]').dataset.value === 'true'`, stepTimeout),
	)
	made := value(t, tab, "the codes made", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="codes-new"] li')].map((li) => li.textContent)`))
	for _, c := range made {
		if !oneTimeCode.MatchString(c) {
			t.Errorf("code shown %q, want XXXX-XXXX-XXXX", c)
		}
	}
	screenshot(t, tab, "admin-codes.png")
	checkA11y(t, tab, "the control room with codes made")

	step(t, tab, "export the codes",
		chromedp.Evaluate[chromedp.Void](`(() => {
			window.exported = null;
			const make = URL.createObjectURL;
			URL.createObjectURL = (b) => { b.text().then((s) => { window.exported = s; }); return make.call(URL, b); };
		})()`),
		chromedp.Click(chromedp.CSS(`[data-testid="codes-export"]`)),
		until(`window.exported !== null`, stepTimeout),
	)
	csv := value(t, tab, "the exported CSV", chromedp.Evaluate[string](`window.exported`))
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) != 4 || strings.TrimSpace(lines[0]) != "code,state,created_at,used_at" {
		t.Errorf("exported CSV = %q, want the header and the 3 codes", csv)
	}
	for _, c := range made {
		if !strings.Contains(csv, c) {
			t.Errorf("exported CSV lacks %s", c)
		}
	}

	step(t, tab, "no code again",
		chromedp.Click(chromedp.CSS(`[data-testid="codes-off"]`)),
		until(`document.querySelector('[data-testid="current-codes_required"]').dataset.value === 'false'`, stepTimeout),
	)
	if srv.GetJSON(t, "/api/screenings/ctl", &pub); pub["code_required"] != false {
		t.Errorf("code_required after turning codes off = %v, want false", pub["code_required"])
	}
}
