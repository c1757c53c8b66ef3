// The operator's side of the admission log (docs/operations.md section 17): what the control room shows of
// a screening's log, and its export for archiving, one .tar.gz laid out as the public routes serve the log,
// which `waitroom verify-log` checks as it is.

package server

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/fairness"
)

// exportWriteWait bounds the write of one file of an export: a client that stops reading is let go, one
// that reads a long log is not cut off by http.write_timeout.
const exportWriteWait = 30 * time.Second

// adminLogView is GET /api/admin/screenings/{id}/log: the screening's log as its writer left it.
type adminLogView struct {
	// Kept says the server keeps the admission log; false: every other field is empty.
	Kept bool `json:"kept"`
	// Size is the records stored; CheckpointSize the records the latest signed checkpoint covers.
	Size           int64 `json:"size"`
	CheckpointSize int64 `json:"checkpoint_size"`
	// CheckpointAt is when the latest checkpoint was signed, and CheckpointAgeMs how long ago by the
	// server's clock; both absent when there is none (or it was signed before the time was kept).
	CheckpointAt    *time.Time `json:"checkpoint_at,omitempty"`
	CheckpointAgeMs *int64     `json:"checkpoint_age_ms,omitempty"`
	// Backlog is the records waiting in Redis to be stored.
	Backlog int64 `json:"backlog"`
	// LogPath is the log's public base path, what `waitroom verify-log` is given on this server's origin;
	// CheckpointPath its latest checkpoint; ExportPath the archive (admin key).
	LogPath        string `json:"log_path,omitempty"`
	CheckpointPath string `json:"checkpoint_path,omitempty"`
	ExportPath     string `json:"export_path,omitempty"`
}

func (s *Server) adminLog(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := s.known(ctx, id); err != nil {
		return err
	}
	if s.Fairness == nil {
		return c.JSON(http.StatusOK, adminLogView{})
	}
	st, err := s.Fairness.Status(ctx, id)
	if err != nil {
		return err
	}
	base := "/api/screenings/" + id + "/log/"
	v := adminLogView{Kept: true, Size: st.Size, CheckpointSize: st.CheckpointSize, Backlog: st.Backlog,
		LogPath: base, CheckpointPath: base + "checkpoint", ExportPath: "/api/admin/screenings/" + id + "/log/export"}
	if !st.CheckpointAt.IsZero() {
		at := st.CheckpointAt.UTC()
		age := max(time.Since(at).Milliseconds(), 0)
		v.CheckpointAt, v.CheckpointAgeMs = &at, &age
	}
	return c.JSON(http.StatusOK, v)
}

// adminLogExport is GET /api/admin/screenings/{id}/log/export: the log as of its latest checkpoint, as a
// .tar.gz streamed a tile at a time (docs/admission-log.md, "Archives").
func (s *Server) adminLogExport(c echo.Context) error {
	id, err := s.logScreening(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.known(ctx, id); err != nil {
		return err
	}
	snap, err := s.Fairness.Snapshot(ctx, id)
	if err != nil {
		return err // fairness.ErrNoLog: 404 NO_ADMISSION_LOG
	}
	w := c.Response()
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="waitroom-log-%s-%d.tar.gz"`, id, snap.Size))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	err = writeLogArchive(ctx, w, snap, s.Fairness.Key().VerifierKey(), func() {
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWait))
	})
	if err != nil {
		// The status is sent: the archive ends unfinished (no gzip trailer), which every reader refuses.
		s.logFor(c).Error("admin: export the admission log", "screening", id, "size", snap.Size, "err", err)
		return nil
	}
	s.logFor(c).Info("admin: admission log exported", "screening", id, "size", snap.Size)
	return nil
}

// writeLogArchive writes the snapshot to w as a .tar.gz: checkpoint, key, every tile of its tree at the path
// the public routes serve it at (tlog.Tile.Path: full tiles and the partial ones with their .p/W), then
// records.txt, every record in log order. It holds one tile in memory at a time; records.txt comes last,
// read again, since a tar entry's size goes before it and the data tiles sum it up. ready is called
// before each file.
func writeLogArchive(ctx context.Context, w io.Writer, snap *fairness.Snapshot, key string, ready func()) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	at := time.Now().UTC().Truncate(time.Second)
	header := func(name string, size int64) error {
		ready()
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: at}); err != nil {
			return fmt.Errorf("server: the log's archive: %s: %w", name, err)
		}
		return nil
	}
	file := func(name string, data []byte) error {
		if err := header(name, int64(len(data))); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("server: the log's archive: %s: %w", name, err)
		}
		return nil
	}
	if err := file("checkpoint", snap.Checkpoint); err != nil {
		return err
	}
	if err := file("key", []byte(key+"\n")); err != nil {
		return err
	}
	var recordBytes int64
	for _, t := range tlog.NewTiles(fairlog.TileHeight, 0, snap.Size) {
		tiles := []tlog.Tile{t}
		if t.L == 0 {
			data := t
			data.L = -1 // the records the level-0 tile hashes
			tiles = append(tiles, data)
		}
		for _, t := range tiles {
			b, err := snap.Tile(ctx, t.Path())
			if err != nil {
				return err
			}
			if t.L == -1 {
				recordBytes += int64(len(b))
			}
			if err := file(t.Path(), b); err != nil {
				return err
			}
		}
	}
	if err := header("records.txt", recordBytes); err != nil {
		return err
	}
	const perRead = 1 << fairlog.TileHeight
	for start := int64(0); start < snap.Size; start += perRead {
		recs, err := snap.Records(ctx, start, min(start+perRead, snap.Size))
		if err != nil {
			return err
		}
		ready()
		for _, r := range recs {
			if _, err := tw.Write(r); err != nil {
				return fmt.Errorf("server: the log's archive: records.txt: %w", err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("server: the log's archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("server: the log's archive: %w", err)
	}
	return nil
}
