// The control room's messages say what just happened: one about an earlier action goes once another
// screening is selected or another action's result is shown.

package browser

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// createMessageEmpty polls until the create form's message is gone.
var createMessageEmpty = until(`document.querySelector('[data-testid="create-message"]').textContent === ''`, stepTimeout)

// createInForm creates screening id through the control room's form and waits for its message.
func createInForm(id string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		fill("#new-id", id),
		fill("#new-name", "Walk "+id),
		chromedp.Click(chromedp.CSS(`[data-testid="create-submit"]`)),
		until(`document.querySelector('[data-testid="create-message"]').textContent.includes('Created `+id+`')`, stepTimeout),
		until(`document.querySelector('[data-testid="screening-select"]').value === '`+id+`'`, stepTimeout),
	}
}

// TestAdminBrowserForgetsTheCreateMessageOnTheNextStep: "Created walk1. It is now selected above." stays
// only while walk1 is the news: selecting another screening clears it, and so does applying settings to
// the one just created.
func TestAdminBrowserForgetsTheCreateMessageOnTheNextStep(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
		// The page asks whether the admin API is on before it has the key (401).
		tab := newTab(t, path, networkStatus(http.StatusUnauthorized))
		step(t, tab, "sign in",
			chromedp.Navigate(srv.URL+"/admin#demo"),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.ID("view-console")),
		)
		step(t, tab, "create walk1", createInForm("walk1")...)
		step(t, tab, "select demo",
			chromedp.SetValue(chromedp.CSS(`[data-testid="screening-select"]`), "demo"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="screening-select"]').dispatchEvent(new Event('change', {bubbles: true}))`),
			until(`document.querySelector('#selected-heading').textContent.includes('(demo)')`, stepTimeout),
			createMessageEmpty,
		)
		step(t, tab, "create walk2", createInForm("walk2")...)
		step(t, tab, "apply walk2's settings",
			fill("#adm-batch", "7"),
			chromedp.Click(chromedp.CSS(`[data-testid="admission-submit"]`)),
			until(`document.querySelector('[data-testid="admission-message"]').textContent.includes('7 per batch')`, stepTimeout),
			createMessageEmpty,
		)
		checkA11y(t, tab, "the control room after applying settings")
	})
}
