// Package web owns the browser pages, embedded in the binary: plain HTML, CSS and JS with no build step and
// nothing fetched from elsewhere, so the pages work from the server alone.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS holds the pages: index.html (the screenings), room.html (the waiting room), and their assets.
var FS fs.FS = mustSub(static, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
