package web

import (
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// pageAsset is a script or style sheet a page loads from /static/.
	pageAsset = regexp.MustCompile(`<(?:script[^>]*\ssrc|link[^>]*\shref)="/static/([^"]+)"`)
	// moduleScript is a page's entry module.
	moduleScript = regexp.MustCompile(`<script type="module" src="/static/([^"]+)"></script>`)
	// importFrom is the specifier of a static import: import ... from '...'; or import '...';
	importFrom = regexp.MustCompile(`(?m)^import\s+(?:[^;]*?\sfrom\s+)?'([^']+)';`)
	// preload is a module a page asks the browser to fetch at once, beside its entry module.
	preload = regexp.MustCompile(`<link rel="modulepreload" href="/static/([^"]+)">`)
	// lazyLoad is a file a module loads only when it needs it: a dynamic import('...'), or a script or
	// style sheet it names by new URL('...', import.meta.url) (a worker, the widget's style sheet).
	lazyLoad = regexp.MustCompile(`(?:\bimport|new URL)\('([^']+)'(?:, import\.meta\.url)?\)`)
)

// TestPagesPreloadEveryModuleTheyImport: each page lists every module its entry module imports, directly or
// not, as a modulepreload, and nothing else, so the browser fetches them all in one round instead of one
// round per level of imports (a crowd's page loads are the burst the server's first seconds serve).
func TestPagesPreloadEveryModuleTheyImport(t *testing.T) {
	for _, page := range []string{"index.html", "room.html", "admin.html", "ticket.html", "checkout.html"} {
		html := read(t, page)
		entries := moduleScript.FindAllStringSubmatch(html, -1)
		if len(entries) != 1 {
			t.Fatalf("%s has %d module scripts, want 1", page, len(entries))
		}
		reached := map[string]bool{}
		follow(t, entries[0][1], page, reached, false)
		delete(reached, entries[0][1])
		var want, got []string
		for p := range reached {
			want = append(want, p)
		}
		for _, m := range preload.FindAllStringSubmatch(html, -1) {
			got = append(got, m[1])
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s preloads %v, want the modules its entry imports: %v", page, got, want)
		}
	}
}

// TestPagesLoadOnlyEmbeddedModules follows each page's entry module through its imports, static and lazy:
// every file a page or a module names is in FS, every import is relative, and every module in FS is loaded
// by some page.
func TestPagesLoadOnlyEmbeddedModules(t *testing.T) {
	reached := map[string]bool{}
	for _, page := range []string{"index.html", "room.html", "admin.html", "ticket.html", "checkout.html"} {
		html := read(t, page)
		for _, m := range pageAsset.FindAllStringSubmatch(html, -1) {
			if _, err := fs.Stat(FS, m[1]); err != nil {
				t.Errorf("%s loads /static/%s: %v, want it embedded", page, m[1], err)
			}
		}
		entries := moduleScript.FindAllStringSubmatch(html, -1)
		if len(entries) != 1 {
			t.Errorf("%s has %d module scripts, want 1", page, len(entries))
		}
		for _, e := range entries {
			follow(t, e[1], page, reached, true)
		}
	}
	err := fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".js") && !reached[p] {
			t.Errorf("%s is imported by no page's modules, want every module in use", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// follow marks module p and the modules it imports, recursively; with lazy, the files it loads lazily too.
func follow(t *testing.T, p, from string, reached map[string]bool, lazy bool) {
	t.Helper()
	if reached[p] {
		return
	}
	reached[p] = true
	src, err := fs.ReadFile(FS, p)
	if err != nil {
		t.Errorf("%s imports %s: %v, want it embedded", from, p, err)
		return
	}
	specs := importFrom.FindAllStringSubmatch(string(src), -1)
	if lazy {
		specs = append(specs, lazyLoad.FindAllStringSubmatch(string(src), -1)...)
	}
	for _, m := range specs {
		spec := m[1]
		if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
			t.Errorf("%s imports %q, want a relative path (the pages have no build step)", p, spec)
			continue
		}
		follow(t, path.Join(path.Dir(p), spec), p, reached, lazy)
	}
}

// TestEveryStaticFileIsEmbedded: go:embed leaves out names that start with "." or "_"; a page, style sheet or
// module so named would be missing from the binary, and only a browser would notice.
func TestEveryStaticFileIsEmbedded(t *testing.T) {
	err := fs.WalkDir(os.DirFS("static"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains([]string{".html", ".css", ".js"}, path.Ext(p)) {
			return err // an editor's swap file is no page's asset
		}
		if _, err := fs.Stat(FS, p); err != nil {
			t.Errorf("static/%s is not embedded (%v), want every file under static/ in FS", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
