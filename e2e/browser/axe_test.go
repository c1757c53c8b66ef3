// The accessibility check of every page state the browser tests visit: axe-core, vendored under testdata
// (its licence beside it), injected into the page as it is, failing the test on any serious or critical
// violation.

package browser

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core's browser build (testdata/axe.min.js, from the npm package axe-core; MPL-2.0, see
// testdata/LICENSE).
//
//go:embed testdata/axe.min.js
var axeSource string

// axeRun runs every rule axe-core runs by default, and label-content-name-mismatch too (WCAG 2.5.3, Label in
// Name), which axe-core counts as experimental and leaves out unless asked.
const axeRun = `axe.run(document, {
	resultTypes: ['violations'],
	rules: {'label-content-name-mismatch': {enabled: true}},
}).then((r) => r.violations.map((v) => ({
	ID: v.id, Impact: v.impact || '', Help: v.help,
	Nodes: v.nodes.map((n) => String(n.target.join(' ')) + ': ' + String(n.failureSummary || '').replace(/\s+/g, ' ')),
})))`

// axeViolation is one rule axe-core found broken, with the elements that break it.
type axeViolation struct {
	ID, Impact, Help string
	Nodes            []string
}

// blocking are the impacts that fail a test; moderate and minor findings are logged.
var blocking = map[string]bool{"serious": true, "critical": true}

// checkA11y runs axe-core on the page of tab as it is now (state names it in the failure) and fails the test
// on any serious or critical violation.
func checkA11y(t *testing.T, tab context.Context, state string) {
	t.Helper()
	injectAxe(t, tab)
	found := value(t, tab, "axe-core on "+state, chromedp.Evaluate[[]axeViolation](axeRun, chromedp.EvalAwaitPromise))
	for _, v := range found {
		msg := fmt.Sprintf("axe-core on %s: %s (%s): %s\n\t%s", state, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n\t"))
		if blocking[v.Impact] {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
	}
}

// injectAxe puts axe-core into the page once per document: a navigation starts a new one without it.
func injectAxe(t *testing.T, tab context.Context) {
	t.Helper()
	if value(t, tab, "axe-core present", chromedp.Evaluate[bool](`typeof window.axe === 'object'`)) {
		return
	}
	step(t, tab, "inject axe-core", chromedp.Evaluate[chromedp.Void](axeSource+"\n;undefined"))
}

// accessibleName is the name a screen reader gives the first element sel matches, as axe-core computes it.
func accessibleName(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	injectAxe(t, tab)
	return value(t, tab, "accessible name of "+sel, chromedp.Evaluate[string](fmt.Sprintf(
		`(() => {
			const e = document.querySelector(%q);
			if (!e) return '(no element)';
			axe.setup(document);
			try { return axe.commons.text.accessibleText(e); } finally { axe.teardown(); }
		})()`, sel)))
}
