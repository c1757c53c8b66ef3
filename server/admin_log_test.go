// The admission log through the operator's API: what the control room reads of it, and its export for
// archiving, checked by `waitroom verify-log` as it comes and unpacked.

package server_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/testenv"
)

// logView is GET /api/admin/screenings/{id}/log.
type logView struct {
	Kept            bool       `json:"kept"`
	Size            int64      `json:"size"`
	CheckpointSize  int64      `json:"checkpoint_size"`
	CheckpointAt    *time.Time `json:"checkpoint_at"`
	CheckpointAgeMs *int64     `json:"checkpoint_age_ms"`
	Backlog         int64      `json:"backlog"`
	LogPath         string     `json:"log_path"`
	CheckpointPath  string     `json:"checkpoint_path"`
	ExportPath      string     `json:"export_path"`
}

// newLogApp is newAdminApp keeping the admission log, signed by a fresh key.
func newLogApp(t *testing.T, env *testenv.Env) *testServer {
	t.Helper()
	key, err := fairlog.GenerateKey("test-log")
	if err != nil {
		t.Fatal(err)
	}
	return newApp(t, env, func(c *config.Config) {
		c.Admin.Key = adminKey
		c.Fairness.Key = key
	})
}

func (a *testServer) logView(t *testing.T, screening string) logView {
	t.Helper()
	var v logView
	decode(t, "GET the log", a.adminCall(t, http.MethodGet, "/api/admin/screenings/"+screening+"/log", ""), &v)
	return v
}

// TestTheControlRoomSeesTheLogGrowAndSigned: the operator's view of a screening's log says nothing stored
// before anyone comes; the places taken wait in Redis until the writer stores them; then they are stored
// and covered by a checkpoint signed a moment ago. Without the key, the route is refused like every admin
// route; an unknown screening is a 404; a server that keeps no log says so.
func TestTheControlRoomSeesTheLogGrowAndSigned(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newLogApp(t, env)
		wantError(t, "GET the log without the key", a.get(t, "/api/admin/screenings/s1/log"), http.StatusUnauthorized, "UNAUTHORIZED")
		wantError(t, "GET an unknown screening's log", a.adminCall(t, http.MethodGet, "/api/admin/screenings/nope/log", ""),
			http.StatusNotFound, "UNKNOWN_SCREENING")
		if v := a.logView(t, "s1"); !v.Kept || v.Size != 0 || v.CheckpointSize != 0 || v.CheckpointAt != nil || v.Backlog != 0 ||
			v.LogPath != "/api/screenings/s1/log/" || v.CheckpointPath != v.LogPath+"checkpoint" || v.ExportPath != "/api/admin/screenings/s1/log/export" {
			t.Errorf("the log before anyone came = %+v, want kept, empty, its paths", v)
		}

		a.admit(t, "s1", 5) // five places, the pace of the tick and its admission: seven records
		if v := a.logView(t, "s1"); v.Size != 0 || v.Backlog != 7 {
			t.Errorf("the log before the writer ran = %+v, want 7 records waiting in Redis, none stored", v)
		}
		before := time.Now()
		if err := a.app.Fairness.Step(context.Background(), "s1"); err != nil {
			t.Fatal(err)
		}
		v := a.logView(t, "s1")
		if v.Size != 7 || v.CheckpointSize != 7 || v.Backlog != 0 {
			t.Errorf("the log after the writer ran = %+v, want 7 stored and signed, none waiting", v)
		}
		if v.CheckpointAt == nil || v.CheckpointAt.Before(before.Add(-time.Second)) || v.CheckpointAt.After(time.Now().Add(time.Second)) ||
			v.CheckpointAgeMs == nil || *v.CheckpointAgeMs < 0 || *v.CheckpointAgeMs > 10_000 {
			t.Errorf("the checkpoint signed at %v, %v ms ago; want a moment ago (after %v)", v.CheckpointAt, v.CheckpointAgeMs, before)
		}
		a.admit(t, "s1", 2)
		if v := a.logView(t, "s1"); v.Size != 7 || v.CheckpointSize != 7 || v.Backlog != 4 {
			t.Errorf("the log with four more records waiting = %+v, want 7 stored, 4 waiting", v)
		}

		off := newAdminApp(t, env)
		var none logView
		decode(t, "GET the log of a server that keeps none", off.adminCall(t, http.MethodGet, "/api/admin/screenings/s1/log", ""), &none)
		if none != (logView{}) {
			t.Errorf("the log of a server that keeps none = %+v, want kept false and nothing else", none)
		}
	})
}

// TestAnExportedLogVerifies: the export of a screening's log, a .tar.gz, holds the checkpoint, the key, every
// tile of the tree at the path the public routes serve it at, and records.txt; verify-log passes on it as
// it comes and unpacked, and exits 1 when one byte of a record is changed. Without the key it is refused
// like every admin route; before the log has a checkpoint, and on a server that keeps none, it is a 404.
func TestAnExportedLogVerifies(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newLogApp(t, env)
		const export = "/api/admin/screenings/s1/log/export"
		wantError(t, "export without the key", a.get(t, export), http.StatusUnauthorized, "UNAUTHORIZED")
		wantError(t, "export before any checkpoint", a.adminCall(t, http.MethodGet, export, ""), http.StatusNotFound, "NO_ADMISSION_LOG")
		wantError(t, "export of an unknown screening", a.adminCall(t, http.MethodGet, "/api/admin/screenings/nope/log/export", ""),
			http.StatusNotFound, "UNKNOWN_SCREENING")

		// 300 places in two ticks, each with its pace: 304 records, a full tile of 256 and a partial one, and a
		// level above.
		a.admit(t, "s1", 150)
		a.admit(t, "s1", 150)
		if err := a.app.Fairness.Step(context.Background(), "s1"); err != nil {
			t.Fatal(err)
		}
		a.admit(t, "s1", 1) // stored within the second, before the next checkpoint: not in the export
		if err := a.app.Fairness.Step(context.Background(), "s1"); err != nil {
			t.Fatal(err)
		}
		if v := a.logView(t, "s1"); v.Size != 307 || v.CheckpointSize != 304 {
			t.Fatalf("the log = %+v, want 307 records stored, 304 signed", v)
		}

		r := a.adminCall(t, http.MethodGet, export, "")
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/gzip" ||
			!strings.Contains(r.header.Get("Content-Disposition"), `filename="waitroom-log-s1-304.tar.gz"`) {
			t.Fatalf("export = %d %v, want 200, a .tar.gz of 304 records to save", r.status, r.header)
		}
		files := untar(t, r.body)
		names := slices.Sorted(maps.Keys(files))
		want := []string{"checkpoint", "key", "records.txt", "tile/8/0/000", "tile/8/0/001.p/48", "tile/8/1/000.p/1",
			"tile/8/data/000", "tile/8/data/001.p/48"}
		if !slices.Equal(names, want) {
			t.Errorf("the archive holds %q, want %q", names, want)
		}
		// Each file is what the public routes serve.
		for _, n := range []string{"checkpoint", "tile/8/0/000", "tile/8/0/001.p/48", "tile/8/1/000.p/1", "tile/8/data/000", "tile/8/data/001.p/48"} {
			if got := a.get(t, "/api/screenings/s1/log/"+n); got.status != http.StatusOK || !bytes.Equal(got.body, files[n]) {
				t.Errorf("the archive's %s differs from what GET %s serves (%d)", n, n, got.status)
			}
		}
		if got := a.get(t, "/.well-known/waitroom-log-key"); !bytes.Equal(got.body, files["key"]) {
			t.Errorf("the archive's key %q, want the published %q", files["key"], got.body)
		}
		var recs struct {
			Records []string `json:"records"`
		}
		decode(t, "the records", a.get(t, "/api/screenings/s1/log/records?start=0&end=304"), &recs)
		if got, want := string(files["records.txt"]), strings.Join(recs.Records, "\n")+"\n"; got != want {
			t.Errorf("records.txt = %d bytes, want the 304 records the route serves (%d bytes)", len(got), len(want))
		}

		// verify-log: the .tar.gz as it came, then unpacked; then a record's byte changed in its data tile.
		gz := filepath.Join(t.TempDir(), "waitroom-log-s1-304.tar.gz")
		if err := os.WriteFile(gz, r.body, 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for n, b := range files {
			p := filepath.Join(dir, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, archive := range []string{gz, dir} {
			if code, out := verifyLog(archive); code != 0 || !strings.Contains(out, "OK") {
				t.Errorf("verify-log %s: exit %d, want 0\n%s", archive, code, out)
			}
		}
		tile := filepath.Join(dir, "tile", "8", "data", "001.p", "48")
		b := files["tile/8/data/001.p/48"]
		i := bytes.Index(b, []byte("seq="))
		altered := slices.Clone(b)
		altered[i+4] ^= 1 // a digit of a place's number
		if err := os.WriteFile(tile, altered, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out := verifyLog(dir); code != 1 || !strings.Contains(out, "VIOLATION") {
			t.Errorf("verify-log of the archive with a record's byte changed: exit %d, want 1\n%s", code, out)
		}

		off := newAdminApp(t, env)
		wantError(t, "export on a server that keeps no log", off.adminCall(t, http.MethodGet, export, ""), http.StatusNotFound, "NO_ADMISSION_LOG")
	})
}

// verifyLog runs `waitroom verify-log archive` keeping no state, and returns its exit code and output.
func verifyLog(archive string) (int, string) {
	var out bytes.Buffer
	code := fairlog.Main(context.Background(), []string{archive, "--state", ""}, &out, &out)
	return code, out.String()
}

// untar reads a .tar.gz's regular files by name.
func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the archive: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = data
	}
	return out
}
