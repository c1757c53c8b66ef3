// What the gate in front of an existing site keeps of a screening: its own gate mode (SetGateMode) and the
// few fields the gate reads per room (GateRoom).

package booking

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/queue"
)

// The gate modes of a screening (gate.mode is the server's; a screening may have its own).
const (
	// GateAuto lets visitors straight through while the room has space, and into the line when it is full.
	GateAuto = "auto"
	// GateQueueAll sends every visitor without an admission to the line (before a drop).
	GateQueueAll = "queue_all"
	// GatePassthrough turns the room off: every visitor goes through, counted.
	GatePassthrough = "passthrough"
)

// ValidGateMode reports whether mode is a gate mode (not the empty one, which means "the server's").
func ValidGateMode(mode string) bool {
	return mode == GateAuto || mode == GateQueueAll || mode == GatePassthrough
}

// GateRoom is what the gate reads of a room (a screening): its sale time, its own admission settings (zero
// fields: the server's defaults) and its own gate mode ("": the server's).
type GateRoom struct {
	ID          string
	SaleOpensAt time.Time
	Admission   queue.Settings
	GateMode    string
}

// GateRoom reads the room id for the gate, or ErrUnknownScreening.
func (s *Store) GateRoom(ctx context.Context, id string) (GateRoom, error) {
	var row struct {
		saleRow
		GateMode string `db:"gate_mode"`
	}
	err := s.db.GetContext(ctx, &row, s.db.Rebind(`SELECT id, sale_opens_at, interval_ms, batch_size, max_active, active_ttl_ms,
		COALESCE(gate_mode, '') AS gate_mode FROM screenings WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return GateRoom{}, fmt.Errorf("booking: gate room %q: %w", truncate(id, 64), ErrUnknownScreening)
	}
	if err != nil {
		return GateRoom{}, fmt.Errorf("booking: gate room %q: %w", truncate(id, 64), err)
	}
	return GateRoom{ID: row.ID, SaleOpensAt: row.SaleOpensAt, Admission: row.settings(s.waitlistDefault), GateMode: row.GateMode}, nil
}

// SetGateMode sets the screening's own gate mode (GateAuto, GateQueueAll or GatePassthrough; empty: back
// to the server's gate.mode). Each gate reads it again within a second (gate.roomTTL).
func (s *Store) SetGateMode(ctx context.Context, id, mode string) error {
	if mode != "" && !ValidGateMode(mode) {
		return badScreening("gate_mode %q: want %q, %q or %q", truncate(mode, 20), GateAuto, GateQueueAll, GatePassthrough)
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE screenings SET gate_mode = ? WHERE id = ?`), nullable(mode), id)
	if err != nil {
		return fmt.Errorf("booking: gate mode of %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: gate mode of %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: gate mode of %q: %w", id, ErrUnknownScreening)
	}
	return nil
}
