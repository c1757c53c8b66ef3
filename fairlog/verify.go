// Verify: a log fetched over HTTP (its checkpoint, its key, its tiles) and checked whole: the signature,
// the consistency with every checkpoint seen before (kept in a state file), every record hashed into the
// tree against the signed root, the rules, and a receipt.

package fairlog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/tlog"
)

// VerifyConfig says what to verify and how.
type VerifyConfig struct {
	// LogURL is a screening's log, http(s)://host/api/screenings/{id}/log/.
	LogURL string
	// Key is the log's note verifier key; empty: fetched from /.well-known/waitroom-log-key of LogURL's host.
	Key string
	// StateFile keeps the checkpoints seen before, by log URL (none: no consistency check, nothing kept).
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
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("fairlog: the log URL %q: want http(s)://host/api/screenings/{id}/log/", cfg.LogURL)
	}
	f := fetcher{ctx: ctx, client: client}
	vkey := cfg.Key
	if vkey == "" {
		b, err := f.get(u.Scheme+"://"+u.Host+"/.well-known/waitroom-log-key", maxSmallBody)
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

	state := map[string]seen{}
	if cfg.StateFile != "" {
		if b, err := os.ReadFile(cfg.StateFile); err == nil {
			if err := json.Unmarshal(b, &state); err != nil {
				return nil, fmt.Errorf("fairlog: the state file %s: %w", cfg.StateFile, err)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("fairlog: the state file: %w", err)
		}
		if old, ok := state[base]; ok {
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
		state[base] = seen{Size: cp.Size, Root: cp.Root.String()}
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
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("fairlog: %w", err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fairlog: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("fairlog: GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fairlog: GET %s: %s: %.200s", u, resp.Status, b)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("fairlog: GET %s: more than %d bytes", u, limit)
	}
	return b, nil
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
