package fairlog_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/waitroom/waitroom/fairlog"
)

// archiveFiles lays a served log out as an archive does (docs/admission-log.md, "Archives"): checkpoint,
// key, records.txt, and every tile of its tree at tlog's path.
func archiveFiles(t *testing.T, s *served) map[string][]byte {
	t.Helper()
	size := int64(len(s.records))
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = s.hashes[id]
		}
		return out, nil
	})
	files := map[string][]byte{
		"checkpoint":  s.signed,
		"key":         []byte(s.key.VerifierKey() + "\n"),
		"records.txt": bytes.Join(s.records, nil),
	}
	for _, tile := range tlog.NewTiles(fairlog.TileHeight, 0, size) {
		tiles := []tlog.Tile{tile}
		if tile.L == 0 {
			data := tile
			data.L = -1
			tiles = append(tiles, data)
		}
		for _, tl := range tiles {
			b, _, err := fairlog.ReadTile(tl.Path(), size, reader, func(a, b int64) ([][]byte, error) { return s.records[a:b], nil })
			if err != nil {
				t.Fatal(err)
			}
			files[tl.Path()] = b
		}
	}
	return files
}

// writeDir writes files under a new directory and returns it.
func writeDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeTar writes files as a tar (gzipped when zipped) under names prefixed by prefix, with a directory
// entry first, and returns its path.
func writeTar(t *testing.T, files map[string][]byte, prefix string, zipped bool) string {
	t.Helper()
	var buf bytes.Buffer
	var gz *gzip.Writer
	tw := tar.NewWriter(&buf)
	if zipped {
		gz = gzip.NewWriter(&buf)
		tw = tar.NewWriter(gz)
	}
	if err := tw.WriteHeader(&tar.Header{Name: prefix + "tile/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(files))
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: prefix + n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
	}
	name := "log.tar"
	if zipped {
		name = "log.tar.gz"
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAnArchiveVerifiesAsTheLogServed: the archive of a log, unpacked or as its .tar.gz (or a plain .tar,
// its names under ./), verifies as the log served did, its key taken from the archive; a receipt is found
// in it; a later archive of the same log is checked against the earlier one kept in the state file.
func TestAnArchiveVerifiesAsTheLogServed(t *testing.T) {
	key := testKey(t, "log1")
	rs := sale(40, 600) // more than two tiles: full and partial ones, two levels of hash tiles
	s := mustServe(t, key, rs)
	files := archiveFiles(t, s)
	state := filepath.Join(t.TempDir(), "state.json")
	receipt := must(key.SignReceipt(fairlog.Receipt{Screening: "s1", Seq: 300, TokenHash: rs[find(rs, 300)].H, Time: 6}))
	for _, archive := range []string{writeDir(t, files), writeTar(t, files, "", true), writeTar(t, files, "./", false)} {
		rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: archive, StateFile: state, Receipt: receipt})
		if err != nil || len(rep.Violations) > 0 {
			t.Fatalf("Verify(%s) = %v, %v; want no violation", archive, rep, err)
		}
		if rep.Size != int64(len(rs)) || rep.Receipt == nil || !rep.Receipt.Admitted {
			t.Errorf("Verify(%s) read %d records, receipt %+v; want %d, place 300 admitted", archive, rep.Size, rep.Receipt, len(rs))
		}
	}
	grown := mustServe(t, key, append(slices.Clone(rs), fairlog.Record{Kind: fairlog.KindPause, T: 20}))
	if rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: writeTar(t, archiveFiles(t, grown), "", true),
		StateFile: state}); err != nil || len(rep.Violations) > 0 {
		t.Fatalf("a later archive of the grown log: %v, %v; want no violation", rep, err)
	}
	forked := slices.Clone(rs)
	forked[10].T = 999
	forked = append(forked, fairlog.Record{Kind: fairlog.KindPause, T: 20}, fairlog.Record{Kind: fairlog.KindResume, T: 21})
	if _, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: writeDir(t, archiveFiles(t, mustServe(t, key, forked))),
		StateFile: state}); !errors.Is(err, fairlog.ErrFork) {
		t.Errorf("an archive that forks from the one seen: %v, want ErrFork", err)
	}
	// Another screening's archive signed by the same key is another log: nothing to compare with.
	other, _ := serve(t, key, "s2", rs)
	if rep, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: writeDir(t, archiveFiles(t, other)),
		StateFile: state}); err != nil || len(rep.Violations) > 0 {
		t.Errorf("another screening's archive: %v, %v; want no violation", rep, err)
	}
}

// TestAnAlteredArchiveIsCaught: one byte of a record changed in a data tile, or in records.txt only, a
// record added to records.txt, a checkpoint signed by a key other than the one given, and a tile missing
// are each refused.
func TestAnAlteredArchiveIsCaught(t *testing.T) {
	key := testKey(t, "log1")
	files := archiveFiles(t, mustServe(t, key, sale(10, 600))) // two full data tiles and a partial one
	alter := func(name string, change func([]byte) []byte) map[string][]byte {
		out := map[string][]byte{}
		for n, b := range files {
			out[n] = b
		}
		out[name] = change(slices.Clone(files[name]))
		return out
	}
	oneByte := func(b []byte) []byte {
		i := bytes.Index(b, []byte("t=6"))
		b[i+2] = '7'
		return b
	}
	dataTile := tlog.Tile{H: fairlog.TileHeight, L: -1, N: 1, W: 1 << fairlog.TileHeight}.Path()
	for _, c := range []struct {
		name  string
		files map[string][]byte
		key   string
		want  error
	}{
		{"a record's byte in a data tile", alter(dataTile, oneByte), "", fairlog.ErrNotSigned},
		{"a record's byte in records.txt", alter("records.txt", oneByte), "", fairlog.ErrNotSigned},
		{"a record added to records.txt", alter("records.txt", func(b []byte) []byte { return append(b, "pause t=99\n"...) }), "",
			fairlog.ErrNotSigned},
		{"another key given", files, testKey(t, "log1").VerifierKey(), fairlog.ErrBadSignature},
		{"a key file not the signer's", alter("key", func([]byte) []byte { return []byte(testKey(t, "log1").VerifierKey()) }), "",
			fairlog.ErrBadSignature},
	} {
		for _, archive := range []string{writeDir(t, c.files), writeTar(t, c.files, "", true)} {
			if _, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: archive, Key: c.key}); !errors.Is(err, c.want) {
				t.Errorf("%s (%s): %v, want %v", c.name, filepath.Base(archive), err, c.want)
			}
		}
	}
	missing := alter("checkpoint", func(b []byte) []byte { return b })
	delete(missing, dataTile)
	if _, err := fairlog.Verify(context.Background(), fairlog.VerifyConfig{LogURL: writeDir(t, missing)}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("an archive without a data tile: %v, want its 404", err)
	}
}

// TestMainChecksAnArchive: verify-log exits 0 on an archive as it was exported, 1 when a byte of a record
// changed, 2 when the archive is not there or not an archive.
func TestMainChecksAnArchive(t *testing.T) {
	key := testKey(t, "log1")
	files := archiveFiles(t, mustServe(t, key, sale(10, 30)))
	run := func(args ...string) (int, string) {
		var out, errs bytes.Buffer
		code := fairlog.Main(context.Background(), args, &out, &errs)
		return code, out.String() + errs.String()
	}
	dir := writeDir(t, files)
	gz := writeTar(t, files, "", true)
	for _, a := range []string{dir, gz} {
		if code, out := run(a, "--state", ""); code != 0 || !strings.Contains(out, "OK") {
			t.Errorf("verify-log %s: exit %d\n%s", a, code, out)
		}
	}
	p := filepath.Join(dir, "records.txt")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[bytes.IndexByte(b, '=')+1]++
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := run(dir, "--state", ""); code != 1 || !strings.Contains(out, "VIOLATION") {
		t.Errorf("verify-log of an altered archive: exit %d\n%s", code, out)
	}
	notTar := filepath.Join(t.TempDir(), "log.tar.gz")
	if err := os.WriteFile(notTar, []byte("not an archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{filepath.Join(t.TempDir(), "absent.tar.gz"), notTar, t.TempDir()} {
		if code, out := run(a, "--state", ""); code != 2 {
			t.Errorf("verify-log %s: exit %d, want 2\n%s", a, code, out)
		}
	}
	if _, err := fs.Stat(os.DirFS(dir), "tile/8/data/000.p/"+fmt.Sprint(len(sale(10, 30)))); err != nil {
		t.Errorf("the archive's one data tile: %v", err)
	}
}
