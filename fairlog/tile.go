// Serving the log in tlog's tile layout (height 8, as Go's checksum database): hash tiles of the tree's
// stored hashes, and data tiles of the records themselves.

package fairlog

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// TileHeight is the height of the log's tiles: 256 hashes or records each.
const TileHeight = 8

// ErrNotFound says a tile beyond the tree it is asked of.
var ErrNotFound = errors.New("no such tile in this tree")

// ErrBadTile says a tile path that is not tlog's layout at height 8.
var ErrBadTile = errors.New("malformed tile path")

// RecordReader reads records [start, end) of a log, each with its final newline.
type RecordReader func(start, end int64) ([][]byte, error)

// ReadTile returns the tile at path ("tile/8/L/NNN[.p/W]" or "tile/8/data/NNN[.p/W]") of the tree of size
// records, read from hashes and records, and whether it is full (it never changes).
func ReadTile(path string, size int64, hashes tlog.HashReader, records RecordReader) ([]byte, bool, error) {
	t, err := tlog.ParseTilePath(path)
	if err != nil || t.H != TileHeight {
		return nil, false, fmt.Errorf("fairlog: %w: %q", ErrBadTile, path)
	}
	full := t.W == 1<<TileHeight
	if t.L == -1 {
		start := t.N << TileHeight
		end := start + int64(t.W)
		if end > size {
			return nil, false, fmt.Errorf("fairlog: %w: records %d to %d of %d", ErrNotFound, start, end, size)
		}
		recs, err := records(start, end)
		if err != nil {
			return nil, false, err
		}
		if int64(len(recs)) != end-start {
			return nil, false, fmt.Errorf("fairlog: records %d to %d: %d read", start, end, len(recs))
		}
		return bytes.Join(recs, nil), full, nil
	}
	// The tile holds hashes [N·256, N·256+W) of level L·8, each of 2^(L·8) records.
	if t.L > 6 || (t.N<<TileHeight+int64(t.W))<<(uint(t.L)*TileHeight) > size {
		return nil, false, fmt.Errorf("fairlog: %w: %s in a tree of %d", ErrNotFound, path, size)
	}
	data, err := tlog.ReadTileData(t, hashes)
	if err != nil {
		return nil, false, fmt.Errorf("fairlog: read %s: %w", path, err)
	}
	return data, full, nil
}

// splitTile splits a data tile into its records, which must be w.
func splitTile(data []byte, w int) ([][]byte, error) {
	out := make([][]byte, 0, w)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 || i+1 > MaxRecord {
			return nil, fmt.Errorf("fairlog: %w: a data tile's record without its newline within %d bytes", ErrBadRecord, MaxRecord)
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	if len(out) != w {
		return nil, fmt.Errorf("fairlog: a data tile of %d records holds %d", w, len(out))
	}
	return out, nil
}
