// Creating and managing screenings: the demo's seeding, the operator's creation with its checks, admission
// settings, closing a sale, and the scheduler's list of sales.

package booking

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/waitroom/waitroom/queue"
)

// Screening is a show with its sale time.
type Screening struct {
	ID          string    `db:"id" json:"id"`
	Name        string    `db:"name" json:"name"`
	StartsAt    time.Time `db:"starts_at" json:"starts_at"`
	SaleOpensAt time.Time `db:"sale_opens_at" json:"sale_opens_at"`
}

// Limits of a screening an operator creates.
const (
	// MaxSeatsPerScreening bounds a screening's catalog (a stadium block, not a stadium).
	MaxSeatsPerScreening = 10000
	// maxNameLen bounds a screening's name, in bytes.
	maxNameLen = 200
)

// plausible reports whether a screening time can be stored and read back by both databases and written as
// JSON: a year from 2000 to 9999 in UTC.
func plausible(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 2000 && y <= 9999
}

// checkSettings refuses admission settings a screening cannot run with (queue.Settings.Validate), as a
// malformed screening in the queue's words.
func checkSettings(a queue.Settings) error {
	var refused *queue.SettingsError
	if err := a.Validate(); errors.As(err, &refused) {
		return &InvalidError{Kind: ErrBadScreening, Message: refused.Message}
	} else if err != nil {
		return fmt.Errorf("booking: %w", err)
	}
	return nil
}

// EnsureScreening creates sc with the given seats unless a screening with its id exists; it reports whether
// it created one. Seeding the demo calls it at every start, from any number of instances.
func (s *Store) EnsureScreening(ctx context.Context, sc Screening, seats []Seat) (bool, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("booking: ensure %s: %w", sc.ID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO screenings (id, name, starts_at, sale_opens_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`), sc.ID, sc.Name, sc.StartsAt.UTC(), sc.SaleOpensAt.UTC())
	if err != nil {
		return false, fmt.Errorf("booking: ensure %s: %w", sc.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("booking: ensure %s: %w", sc.ID, err)
	}
	if n == 0 {
		return false, nil
	}
	for _, seat := range seats {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO seats (screening_id, seat_id, row_label, number) VALUES (?, ?, ?, ?)`),
			sc.ID, seat.ID, seat.Row, seat.Number); err != nil {
			return false, fmt.Errorf("booking: ensure %s seat %s: %w", sc.ID, seat.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("booking: ensure %s: %w", sc.ID, err)
	}
	return true, nil
}

// CreateScreening adds a screening with its seats and its own admission settings (zero fields: the
// server's defaults), in one transaction. An id already taken is ErrScreeningExists; a malformed screening
// is ErrBadScreening. A screening without seats is a site-wide room (the gate's): its line never sells out.
// Every instance's scheduler finds it at its next refresh and opens its line at the sale
// time: no restart, no deploy.
func (s *Store) CreateScreening(ctx context.Context, sc Screening, seats []Seat, a queue.Settings) error {
	switch {
	case !queue.ValidScreening(sc.ID):
		return badScreening("screening id %q: want 1–64 letters, digits, '-' or '_'", truncate(sc.ID, 64))
	case strings.TrimSpace(sc.Name) == "" || len(sc.Name) > maxNameLen:
		return badScreening("screening name: want 1–%d bytes", maxNameLen)
	case !utf8.ValidString(sc.Name) || strings.ContainsFunc(sc.Name, unicode.IsControl):
		return badScreening("screening name: want UTF-8 text without control characters")
	case sc.StartsAt.IsZero() || sc.SaleOpensAt.IsZero():
		return badScreening("starts_at and sale_opens_at are required")
	case !plausible(sc.StartsAt) || !plausible(sc.SaleOpensAt):
		return badScreening("starts_at and sale_opens_at must fall in the years 2000 to 9999 (UTC)")
	case sc.SaleOpensAt.After(sc.StartsAt):
		return badScreening("the sale cannot open after the screening starts")
	case len(seats) > MaxSeatsPerScreening:
		// No seats is a site-wide room: a line in front of a site (the gate), never sold out.
		return badScreening("%d seats: want 0 (a site-wide room) to %d", len(seats), MaxSeatsPerScreening)
	}
	if err := checkSettings(a); err != nil {
		return err
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("booking: create %s: %w", sc.ID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO screenings (id, name, starts_at, sale_opens_at, interval_ms, batch_size, max_active, active_ttl_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`), sc.ID, sc.Name, sc.StartsAt.UTC(), sc.SaleOpensAt.UTC(),
		nullMs(a.Interval), nullInt(a.BatchSize), nullInt(a.MaxActive), nullMs(a.ActiveTTL))
	if err != nil {
		return fmt.Errorf("booking: create %s: %w", sc.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: create %s: %w", sc.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: create %s: %w", sc.ID, ErrScreeningExists)
	}
	// Many rows per statement: a 10,000-seat catalog is 20 round trips, not 10,000.
	const perInsert = 500
	for start := 0; start < len(seats); start += perInsert {
		batch := seats[start:min(start+perInsert, len(seats))]
		var q strings.Builder
		q.WriteString(`INSERT INTO seats (screening_id, seat_id, row_label, number) VALUES `)
		args := make([]any, 0, 4*len(batch))
		for i, seat := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, sc.ID, seat.ID, seat.Row, seat.Number)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(q.String()), args...); err != nil {
			return fmt.Errorf("booking: create %s seats: %w", sc.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("booking: create %s: %w", sc.ID, err)
	}
	return nil
}

// SetAdmission changes the screening's admission settings: each non-zero field of a replaces the stored
// one. It returns the screening's settings after the change (zero fields: the server's defaults). Every
// instance's scheduler applies them at its next refresh.
func (s *Store) SetAdmission(ctx context.Context, id string, a queue.Settings) (queue.Settings, error) {
	if err := checkSettings(a); err != nil {
		return queue.Settings{}, err
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE screenings SET
		interval_ms = COALESCE(?, interval_ms), batch_size = COALESCE(?, batch_size),
		max_active = COALESCE(?, max_active), active_ttl_ms = COALESCE(?, active_ttl_ms) WHERE id = ?`),
		nullMs(a.Interval), nullInt(a.BatchSize), nullInt(a.MaxActive), nullMs(a.ActiveTTL), id)
	if err != nil {
		return queue.Settings{}, fmt.Errorf("booking: admission of %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return queue.Settings{}, fmt.Errorf("booking: admission of %s: %w", id, err)
	}
	if n == 0 {
		return queue.Settings{}, fmt.Errorf("booking: admission of %q: %w", id, ErrUnknownScreening)
	}
	var row saleRow
	if err := s.db.GetContext(ctx, &row, s.db.Rebind(saleSQL+` WHERE id = ?`), id); err != nil {
		return queue.Settings{}, fmt.Errorf("booking: admission of %s: %w", id, err)
	}
	return row.settings(s.waitlistDefault), nil
}

// CloseSale records that the operator closed the screening's sale: its scheduler stops. (The line itself is
// closed in Redis by the caller: queue.Close.)
func (s *Store) CloseSale(ctx context.Context, id string, at time.Time) error {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE screenings SET closed_at = COALESCE(closed_at, ?) WHERE id = ?`), at.UTC(), id)
	if err != nil {
		return fmt.Errorf("booking: close %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: close %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: close %q: %w", id, ErrUnknownScreening)
	}
	return nil
}

const saleSQL = `SELECT id, sale_opens_at, interval_ms, batch_size, max_active, active_ttl_ms, waitlist FROM screenings`

// saleRow is a screening as the scheduler and the operator see it.
type saleRow struct {
	ID          string        `db:"id"`
	SaleOpensAt time.Time     `db:"sale_opens_at"`
	IntervalMs  sql.NullInt64 `db:"interval_ms"`
	BatchSize   sql.NullInt64 `db:"batch_size"`
	MaxActive   sql.NullInt64 `db:"max_active"`
	ActiveTTLMs sql.NullInt64 `db:"active_ttl_ms"`
	Waitlist    sql.NullBool  `db:"waitlist"`
}

// settings are the screening's own admission settings, and whether it keeps a waitlist: its own setting, else
// waitlistDefault (the server's).
func (r saleRow) settings(waitlistDefault bool) queue.Settings {
	s := queue.Settings{
		Interval: time.Duration(r.IntervalMs.Int64) * time.Millisecond, BatchSize: int(r.BatchSize.Int64),
		MaxActive: int(r.MaxActive.Int64), ActiveTTL: time.Duration(r.ActiveTTLMs.Int64) * time.Millisecond,
		Waitlist: waitlistDefault,
	}
	if r.Waitlist.Valid {
		s.Waitlist = r.Waitlist.Bool
	}
	return s
}

// Sales returns the screenings whose sale opens at or before until, with their own admission settings:
// the scheduler's list. A sale that sold out or was closed is marked Ended (its loop stops; its line is kept
// closed) and listed only while its show is still to come; a site-wide room (no seats) never sells out.
func (s *Store) Sales(ctx context.Context, until time.Time) ([]queue.Sale, error) {
	var rows []struct {
		saleRow
		Ended  bool `db:"ended"`
		Closed bool `db:"closed"`
		Paused bool `db:"paused"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT id, sale_opens_at, interval_ms, batch_size, max_active, active_ttl_ms, waitlist, ended,
		closed_at IS NOT NULL AS closed, paused_at IS NOT NULL AS paused
		FROM (SELECT s.*, (s.closed_at IS NOT NULL OR
			((SELECT COUNT(*) FROM seats t WHERE t.screening_id = s.id) > 0 AND
			(SELECT COUNT(*) FROM reservation_seats r JOIN reservations o ON o.id = r.reservation_id
				WHERE r.screening_id = s.id AND r.live AND o.status = 'confirmed') >=
			(SELECT COUNT(*) FROM seats t WHERE t.screening_id = s.id))) AS ended
			FROM screenings s WHERE s.sale_opens_at <= ?) x
		WHERE NOT ended OR starts_at > ? ORDER BY id`), until.UTC(), time.Now().UTC())
	if err != nil {
		return nil, fmt.Errorf("booking: sales: %w", err)
	}
	out := make([]queue.Sale, len(rows))
	for i, r := range rows {
		out[i] = queue.Sale{ID: r.ID, OpensAt: r.SaleOpensAt, Settings: r.settings(s.waitlistDefault), Ended: r.Ended, Closed: r.Closed, Paused: r.Paused}
	}
	return out, nil
}

// Managed is a screening as its operator sees it: its summary and its own admission settings (zero
// fields: the server's defaults; Waitlist the one in force).
type Managed struct {
	Summary
	Admission queue.Settings
}

// Managed lists every screening for the operator, by start time.
func (s *Store) Managed(ctx context.Context) ([]Managed, error) {
	sums, err := s.Screenings(ctx)
	if err != nil {
		return nil, err
	}
	var rows []saleRow
	if err := s.db.SelectContext(ctx, &rows, saleSQL); err != nil {
		return nil, fmt.Errorf("booking: managed: %w", err)
	}
	byID := make(map[string]saleRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]Managed, len(sums))
	for i, sum := range sums {
		out[i] = Managed{Summary: sum, Admission: byID[sum.ID].settings(s.waitlistDefault)}
	}
	return out, nil
}

func nullMs(d time.Duration) sql.NullInt64 {
	return sql.NullInt64{Int64: d.Milliseconds(), Valid: d > 0}
}

func nullInt(n int) sql.NullInt64 { return sql.NullInt64{Int64: int64(n), Valid: n > 0} }

// SetCheckout sets the screening's own checkout mode (CheckoutInstant or CheckoutHold; empty: back to the
// server's). The next reservation uses it: the mode is read inside each reservation's transaction.
func (s *Store) SetCheckout(ctx context.Context, id, mode string) error {
	if mode != "" && mode != CheckoutInstant && mode != CheckoutHold {
		return badScreening("checkout %q: want %q or %q", truncate(mode, 20), CheckoutInstant, CheckoutHold)
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE screenings SET checkout = ? WHERE id = ?`), nullable(mode), id)
	if err != nil {
		return fmt.Errorf("booking: checkout of %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: checkout of %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: checkout of %q: %w", id, ErrUnknownScreening)
	}
	return nil
}

// SetPaused records that the operator paused the screening's admission (or resumed it), so that a Redis
// that forgot the pause gets it back (the scheduler's refresh puts it back from here).
func (s *Store) SetPaused(ctx context.Context, id string, paused bool, at time.Time) error {
	value := any(nil)
	if paused {
		value = at.UTC()
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE screenings SET paused_at = ? WHERE id = ?`), value, id)
	if err != nil {
		return fmt.Errorf("booking: pause %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: pause %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: pause %q: %w", id, ErrUnknownScreening)
	}
	return nil
}

// waitlist reports whether the screening keeps its line as a waitlist when it sells out: its own setting,
// else def (the server's).
func (s *Store) waitlist(ctx context.Context, id string, def bool) (bool, error) {
	var on sql.NullBool
	if err := s.db.GetContext(ctx, &on, s.db.Rebind(`SELECT waitlist FROM screenings WHERE id = ?`), id); err != nil {
		return false, fmt.Errorf("booking: waitlist of %s: %w", id, err)
	}
	if on.Valid {
		return on.Bool, nil
	}
	return def, nil
}

// SetWaitlist sets whether the screening keeps its line as a waitlist when it sells out (nil: follow the
// server's booking.waitlist again).
func (s *Store) SetWaitlist(ctx context.Context, id string, on *bool) error {
	var v sql.NullBool
	if on != nil {
		v = sql.NullBool{Bool: *on, Valid: true}
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE screenings SET waitlist = ? WHERE id = ?`), v, id)
	if err != nil {
		return fmt.Errorf("booking: waitlist of %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("booking: waitlist of %q: %w", id, errors.Join(err, ErrUnknownScreening))
	}
	return nil
}

// saleState reports, in one read, whether the operator closed the screening's sale and whether it keeps a
// waitlist (its own setting, else def): what a release asks before it reopens the line.
func (s *Store) saleState(ctx context.Context, id string, def bool) (closed, waitlist bool, err error) {
	var row struct {
		Closed   bool         `db:"closed"`
		Waitlist sql.NullBool `db:"waitlist"`
	}
	err = s.db.GetContext(ctx, &row, s.db.Rebind(`SELECT closed_at IS NOT NULL AS closed, waitlist FROM screenings WHERE id = ?`), id)
	if err != nil {
		return false, false, fmt.Errorf("booking: sale of %s: %w", id, err)
	}
	if row.Waitlist.Valid {
		def = row.Waitlist.Bool
	}
	return row.Closed, def, nil
}
