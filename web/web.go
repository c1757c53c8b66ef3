// Package web owns the browser pages, embedded in the binary: plain HTML, CSS and JavaScript modules with no
// build step and nothing fetched from elsewhere, so the pages work from the server alone.
//
// Files: web.go (the embedded pages, FS), web_test.go (every page's modules embedded, preloaded, in use),
// node_test.go (runs the room's module tests under Node). Not embedded: jstest/ (those tests, Node's own
// runner over the real modules and jstest/fakes.js, a fake of the little of a browser they touch) and
// package.json (it only tells Node that the .js files are ES modules, as browsers load them; no packages).
package web

import (
	"embed"
	"io/fs"
)

// static takes the folders under static/ too; like any go:embed of a directory, it leaves out files whose
// names start with "." or "_", so no module may be named so.
//
//go:embed static
var static embed.FS

// FS holds the pages and their assets: index.html and index.js (the screenings), room.html and the modules
// under room/ (the waiting room), admin.html and admin/ (the control room), ticket.html and ticket/ (an
// order's ticket), checkout.html and checkout/ (the demo checkout), lib/ (code the pages share),
// i18n.js with the strings of each language under i18n/, the style sheets, and vendor/ (outside code kept
// as it was published: the altcha widget, which the room imports only when a screening asks for a proof of
// work). Each page loads one module, which imports the others by relative paths; no build step.
var FS fs.FS = mustSub(static, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
