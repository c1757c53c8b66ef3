// ResetDemo: `waitroom reset-demo`, the operator's reset of sales from the command line, against the
// backends of the same settings the server reads: the demo's by default, for a demo run again.

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
)

// ResetDemo resets the sale of each screening named on the command line, "demo" when none is
// (booking.ResetSale: its orders deleted, its line emptied and open again), and writes what it deleted to
// stdout. A sale with held or confirmed orders is refused unless -force. The demo screening is seeded first
// when demo.enabled, so a reset on a fresh database leaves a fresh demo.
//
// On Redis and a database of their own (redis.addr, database.url) it runs beside the servers: they hear the
// reset and their sockets of the screening reconnect into the fresh line. The embedded default's Redis lives
// inside the server: stop the server first (`make reset` then `make run`; one answering on http.addr is
// refused), or reset it live with the admin API (POST /api/admin/screenings/{id}/reset).
func ResetDemo(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := commandFlags(args, stdout)
	force := fs.Bool("force", false, "reset a sale with held or confirmed orders too, deleting them")
	cfg, err := loadConfig(fs, args, getenv)
	if err != nil {
		return fmt.Errorf("reset-demo: %w", err)
	}
	ids := fs.Args()
	if len(ids) == 0 {
		ids = []string{"demo"}
	}
	if cfg.Embedded() {
		// The server's Redis is inside it: a reset from here would empty the database under a line that
		// stays closed. One answering on http.addr is told to stop first.
		if target, err := probeAddr(cfg.HTTP.Addr); err == nil && probe(ctx, "http://"+target+"/healthz", healthcheckTimeout) == nil {
			return fmt.Errorf("reset-demo: a server answers on %s with the embedded Redis inside it: stop it first, "+
				"or reset through the admin API (POST /api/admin/screenings/{id}/reset)", cfg.HTTP.Addr)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rdb, closeRedis, err := openRedis(cfg, log)
	if err != nil {
		return fmt.Errorf("reset-demo: %w", err)
	}
	defer closeRedis()
	db, err := booking.Open(ctx, cfg.Database.URL, cfg.Data.Dir)
	if err != nil {
		return fmt.Errorf("reset-demo: %w", err)
	}
	defer db.Close()
	if err := booking.Migrate(ctx, db); err != nil {
		return fmt.Errorf("reset-demo: %w", err)
	}
	store := booking.NewStore(db)
	if cfg.Demo.Enabled {
		if err := seedDemo(ctx, store, log); err != nil {
			return fmt.Errorf("reset-demo: %w", err)
		}
	}
	q := queue.New(rdb, cfg.Redis.Prefix)
	book := booking.New(store, q, q, nil, booking.Settings{})
	for _, id := range ids {
		res, err := book.ResetSale(ctx, id, *force)
		if errors.Is(err, booking.ErrSaleHasOrders) {
			return fmt.Errorf("reset-demo: %s: %w: -force resets it, deleting them", id, err)
		}
		if err != nil {
			return fmt.Errorf("reset-demo: %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "reset %s: %d orders deleted (%d held or confirmed); its line is empty and open\n", id, res.Orders, res.Live)
	}
	return nil
}
