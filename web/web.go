// Package web owns the browser pages, embedded in the binary: plain HTML, CSS and JavaScript modules with no
// build step and nothing fetched from elsewhere, so the pages work from the server alone.
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

// FS holds the pages: index.html (the screenings), room.html (the waiting room), admin.html (the control
// room), and their assets: styles, modules and the strings of each language under i18n/.
var FS fs.FS = mustSub(static, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
