// Verify: a log fetched over HTTP (its checkpoint, its key, its tiles) and checked whole: the signature,
// the consistency with every checkpoint seen before (kept in a state file), every record hashed into the
// tree against the signed root, the rules, and a receipt. An archive of the log (a directory, or the
// .tar.gz the operator's export gives) is read through the same code, by an HTTP client that serves its files.

package fairlog

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	pathpkg "path"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// VerifyConfig says what to verify and how.
type VerifyConfig struct {
	// LogURL is a screening's log, http(s)://host/api/screenings/{id}/log/, or an archive of it: a directory
	// or a .tar.gz file (docs/admission-log.md, "Archives").
	LogURL string
	// Key is the log's note verifier key; empty: fetched from /.well-known/waitroom-log-key of LogURL's host,
	// or an archive's file key.
	Key string
	// StateFile keeps the checkpoints seen before, by log URL, or for an archive by its log's origin and key
	// (none: no consistency check, nothing kept).
	StateFile string
	// Receipt is a receipt to find in the log (nil: none).
	Receipt []byte
	// HTTP is the client (nil: http.DefaultClient).
	HTTP *http.Client
}

// Bounds on what a verifier reads from a server it does not trust.
const (
	maxSmallBody  = 64 << 10
	maxTileBody   = (1 << TileHeight) * MaxRecord
	fetchesAtOnce = 8
)

// seen is a checkpoint kept in the state file.
type seen struct {
	Size int64  `json:"size"`
	Root string `json:"root"`
}

// Verify fetches the log at cfg.LogURL and checks it (docs/admission-log.md, "What the verifier checks").
// It returns an error when it could not check (no answer, a malformed answer, a bad signature, a tree
// that does not match its checkpoint, a fork); a report with violations when the log breaks a rule; and
// the state file is written only when everything verified.
func Verify(ctx context.Context, cfg VerifyConfig) (*Report, error) {
	client := cfg.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	base := strings.TrimSuffix(cfg.LogURL, "/") + "/"
	archived := !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://")
	keyURL := ""
	var err error
	if archived {
		if client, err = openArchive(cfg.LogURL); err != nil {
			return nil, err
		}
		base, keyURL = archiveBase, archiveBase+"key"
	} else {
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("fairlog: the log URL %q: want http(s)://host/api/screenings/{id}/log/, or an archive", cfg.LogURL)
		}
		keyURL = u.Scheme + "://" + u.Host + "/.well-known/waitroom-log-key"
	}
	f := fetcher{ctx: ctx, client: client}
	vkey := cfg.Key
	if vkey == "" {
		b, err := f.get(keyURL, maxSmallBody)
		if err != nil {
			return nil, err
		}
		vkey = strings.TrimSpace(string(b))
	}
	signed, err := f.get(base+"checkpoint", maxSmallBody)
	if err != nil {
		return nil, err
	}
	cp, err := OpenCheckpoint(signed, vkey)
	if err != nil {
		return nil, err
	}
	tiles := &tileReader{f: f, base: base}
	hashes := tlog.TileHashReader(tlog.Tree{N: cp.Size, Hash: cp.Root}, tiles)
	// A log served is known by its URL; an archive, wherever it lies, by its log's name and signer: the
	// same key's checkpoints of one screening are one log, and two archives of it must agree.
	stateKey := base
	if archived {
		stateKey = "archive of waitroom/" + cp.Screening + " signed by " + vkey
	}

	state := map[string]seen{}
	if cfg.StateFile != "" {
		if b, err := os.ReadFile(cfg.StateFile); err == nil {
			if err := json.Unmarshal(b, &state); err != nil {
				return nil, fmt.Errorf("fairlog: the state file %s: %w", cfg.StateFile, err)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("fairlog: the state file: %w", err)
		}
		if old, ok := state[stateKey]; ok {
			if err := consistent(old, cp, hashes); err != nil {
				return nil, err
			}
		}
	}

	records, err := fetchRecords(f, base, cp.Size)
	if err != nil {
		return nil, err
	}
	root, err := treeHash(records)
	if err != nil {
		return nil, err
	}
	if root != cp.Root {
		return nil, fmt.Errorf("fairlog: %w: its %d records hash to %s, but its checkpoint signed %s", ErrNotSigned, cp.Size, root, cp.Root)
	}
	if archived {
		if err := sameRecords(f, records); err != nil {
			return nil, err
		}
	}
	parsed := make([]Record, len(records))
	var bad []string
	for i, r := range records {
		if parsed[i], err = ParseRecord(r); err != nil {
			bad = append(bad, fmt.Sprintf("record %d: %v", i, err))
		}
	}
	rep, err := checkWithBeacons(f, cp.Screening, parsed) // with the chain info of the beacon its seed names
	if err != nil {
		return nil, err
	}
	rep.Root = base64.StdEncoding.EncodeToString(cp.Root[:])
	rep.Violations = append(bad, rep.Violations...)
	if cfg.Receipt != nil {
		r, err := OpenReceipt(cfg.Receipt, vkey)
		if err != nil {
			rep.Violations = append(rep.Violations, "the receipt: "+err.Error())
		} else {
			rep.CheckReceipt(r)
		}
	}
	if cfg.StateFile != "" && len(rep.Violations) == 0 {
		state[stateKey] = seen{Size: cp.Size, Root: cp.Root.String()}
		b, _ := json.MarshalIndent(state, "", "  ")
		if err := os.WriteFile(cfg.StateFile, b, 0o644); err != nil {
			return rep, fmt.Errorf("fairlog: keep the checkpoint: %w", err)
		}
	}
	return rep, nil
}

// ErrNotSigned says records served that are not the ones the checkpoint signed.
var ErrNotSigned = errors.New("the records served are not the log its checkpoint signed")

// ErrFork says a log whose checkpoint does not extend one seen before.
var ErrFork = errors.New("the log's checkpoint is not consistent with one seen before")

// consistent checks that cp extends old: the same tree, grown.
func consistent(old seen, cp Checkpoint, hashes tlog.HashReader) error {
	oldRoot, err := tlog.ParseHash(old.Root)
	if err != nil {
		return fmt.Errorf("fairlog: the state file's root %q: %w", old.Root, err)
	}
	switch {
	case old.Size > cp.Size:
		return fmt.Errorf("fairlog: %w: it shrank from %d records to %d", ErrFork, old.Size, cp.Size)
	case old.Size == cp.Size:
		if oldRoot != cp.Root {
			return fmt.Errorf("fairlog: %w: %d records with another root", ErrFork, cp.Size)
		}
		return nil
	}
	proof, err := tlog.ProveTree(cp.Size, old.Size, hashes)
	if err != nil {
		return fmt.Errorf("fairlog: %w: %w", ErrFork, err)
	}
	if err := tlog.CheckTree(proof, cp.Size, cp.Root, old.Size, oldRoot); err != nil {
		return fmt.Errorf("fairlog: %w: %w", ErrFork, err)
	}
	return nil
}

// fetcher gets bounded answers.
type fetcher struct {
	ctx    context.Context
	client *http.Client
}

func (f fetcher) get(u string, limit int64) ([]byte, error) {
	b, found, err := f.getIfFound(u, limit)
	if err == nil && !found {
		return nil, fmt.Errorf("fairlog: GET %s: %d Not Found: %.200s", u, http.StatusNotFound, b)
	}
	return b, err
}

// getIfFound is get that answers found false, and no error, for a 404.
func (f fetcher) getIfFound(u string, limit int64) ([]byte, bool, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, fmt.Errorf("fairlog: %w", err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("fairlog: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, false, fmt.Errorf("fairlog: GET %s: %w", u, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return b, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("fairlog: GET %s: %s: %.200s", u, resp.Status, b)
	}
	if int64(len(b)) > limit {
		return nil, false, fmt.Errorf("fairlog: GET %s: more than %d bytes", u, limit)
	}
	return b, true, nil
}

// tileReader reads hash tiles over HTTP, for tlog.TileHashReader.
type tileReader struct {
	f    fetcher
	base string
}

func (r *tileReader) Height() int { return TileHeight }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := r.f.get(r.base+t.Path(), maxTileBody)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (r *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// fetchRecords reads records [0, size) from the data tiles, a few tiles at once.
func fetchRecords(f fetcher, base string, size int64) ([][]byte, error) {
	n := (size + 1<<TileHeight - 1) >> TileHeight
	tiles := make([][][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, fetchesAtOnce)
	for k := int64(0); k < n; k++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w := min(1<<TileHeight, size-k<<TileHeight)
			t := tlog.Tile{H: TileHeight, L: -1, N: k, W: int(w)}
			b, err := f.get(base+t.Path(), maxTileBody)
			if err == nil {
				tiles[k], err = splitTile(b, int(w))
			}
			errs[k] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([][]byte, 0, size)
	for _, t := range tiles {
		out = append(out, t...)
	}
	return out, nil
}

// treeHash is the RFC 6962 tree hash of records.
func treeHash(records [][]byte) (tlog.Hash, error) {
	stored := make([]tlog.Hash, 0, 2*len(records))
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			if id >= int64(len(stored)) {
				return nil, fmt.Errorf("fairlog: hash %d not computed", id)
			}
			out[i] = stored[id]
		}
		return out, nil
	})
	for n, r := range records {
		hs, err := tlog.StoredHashes(int64(n), r, reader)
		if err != nil {
			return tlog.Hash{}, err
		}
		stored = append(stored, hs...)
	}
	return tlog.TreeHash(int64(len(records)), reader)
}

// archiveBase is where the files of an archive are read from: its client serves them, and never goes to
// the network (the .invalid domain could not resolve anyway).
const archiveBase = "http://archive.invalid/"

// Bounds on an archive read into memory (a .tar.gz; a directory is read a file at a time).
const (
	maxArchiveBytes   = 4 << 30
	maxArchiveEntries = 1 << 22
)

// openArchive returns a client that serves the archive at path under archiveBase: a directory (the archive
// unpacked), or a .tar.gz (or .tar) file, read into memory.
func openArchive(path string) (*http.Client, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("fairlog: the log %q: want http(s)://host/api/screenings/{id}/log/, a directory or a .tar.gz: %w", path, err)
	}
	if fi.IsDir() {
		return &http.Client{Transport: http.NewFileTransport(http.Dir(path))}, nil
	}
	files, err := readTar(path)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: http.NewFileTransportFS(files)}, nil
}

// readTar reads the regular files of the tar file at path, gzipped or not, by their clean names.
func readTar(path string) (archiveFS, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fairlog: the archive: %w", err)
	}
	defer file.Close()
	in := bufio.NewReader(file)
	var r io.Reader = in
	if magic, _ := in.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(in)
		if err != nil {
			return nil, fmt.Errorf("fairlog: the archive %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	tr := tar.NewReader(r)
	files := archiveFS{}
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("fairlog: the archive %s: %w", path, err)
		}
		if n >= maxArchiveEntries {
			return nil, fmt.Errorf("fairlog: the archive %s: more than %d files", path, maxArchiveEntries)
		}
		if h.Typeflag != tar.TypeReg {
			continue // directories, links: the log is its files
		}
		total += h.Size
		if h.Size < 0 || total > maxArchiveBytes {
			return nil, fmt.Errorf("fairlog: the archive %s: more than %d bytes", path, int64(maxArchiveBytes))
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("fairlog: the archive %s: %s: %w", path, h.Name, err)
		}
		files[pathpkg.Clean(strings.TrimPrefix(h.Name, "/"))] = b
	}
	return files, nil
}

// archiveFS is an archive's files by name, for http.NewFileTransportFS.
type archiveFS map[string][]byte

// Open opens a file; a name that is no file of the archive (a directory among them) does not exist.
func (a archiveFS) Open(name string) (fs.File, error) {
	b, ok := a[name]
	if !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &archiveFile{Reader: bytes.NewReader(b), name: pathpkg.Base(name), size: int64(len(b))}, nil
}

// archiveFile is an open file of an archiveFS: it reads and seeks, as http's file server needs.
type archiveFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *archiveFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *archiveFile) Close() error               { return nil }
func (f *archiveFile) Name() string               { return f.name }
func (f *archiveFile) Size() int64                { return f.size }
func (f *archiveFile) Mode() fs.FileMode          { return 0o444 }
func (f *archiveFile) ModTime() time.Time         { return time.Time{} }
func (f *archiveFile) IsDir() bool                { return false }
func (f *archiveFile) Sys() any                   { return nil }

// sameRecords checks an archive's records.txt, when it has one, against the records its data tiles hold
// (which hash to the signed root): a copy that differs is not the signed log.
func sameRecords(f fetcher, records [][]byte) error {
	var n int64
	for _, r := range records {
		n += int64(len(r))
	}
	// Room for a record more than the tiles hold, so a copy with one added differs rather than overflows.
	txt, found, err := f.getIfFound(archiveBase+"records.txt", n+MaxRecord)
	if err != nil || !found {
		return err
	}
	if !bytes.Equal(txt, bytes.Join(records, nil)) {
		return fmt.Errorf("fairlog: %w: the archive's records.txt differs from its data tiles", ErrNotSigned)
	}
	return nil
}
