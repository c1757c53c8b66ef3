// A reservation's write: one transaction, fenced, refused when a seat is sold, the screening sold out or
// the pass spent, with the database's constraints as the last word.

package booking

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/waitroom/waitroom/queue"
)

// write is one reservation to insert.
type write struct {
	screening, holder, passID string
	seats                     []string // sorted, known
	total                     int      // the screening's seat count
	idempotencyKey, hash      string
	// stillHeld reports, right before commit, whether the caller still holds every seat lock (nil: skip).
	stillHeld func(ctx context.Context) (bool, error)
	// afterFence runs after the fence is written (tests pause here to let a lease run out).
	afterFence func()
	// committed runs right after the commit succeeded, before anything else.
	committed func()
	// timeout bounds the statements before the commit (0: none).
	timeout time.Duration
}

// insert writes a reservation in one transaction. It takes the next fencing number and writes it on the
// seat rows only where it is higher than what is there, so a lock holder whose lease ran out never writes
// over a newer holder's work (ErrLockLost); seats already sold are ErrSeatTaken (by a read, or by the UNIQUE
// constraint if a race slipped past the Redis locks); a pass that already reserved is ErrPassSpent; a
// screening with no seat left is ErrSoldOut; and a holder who lost its locks by commit time is ErrLockLost.
func (s *Store) insert(ctx context.Context, w write) (Reservation, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return Reservation{}, fmt.Errorf("booking: reserve: %w", err)
	}
	defer tx.Rollback()
	// The statements before the commit are bounded by w.timeout (a slow database answers 503, not after
	// minutes); the transaction itself and its commit are not, so a commit is never cut off half-known.
	work := ctx
	if w.timeout > 0 {
		var cancel context.CancelFunc
		work, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}

	r := Reservation{Screening: w.screening, Seats: w.seats, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	write := s.writeStatements
	if s.db.DriverName() == "postgres" {
		write = s.writeOnce
	}
	if r.ID, err = write(work, tx, w, r.CreatedAt); err != nil {
		var taken *TakenError
		if errors.As(err, &taken) && taken.byConstraint {
			_ = tx.Rollback()
			return Reservation{}, s.soldOf(work, w.screening, w.seats)
		}
		return Reservation{}, err
	}
	if w.stillHeld != nil {
		held, err := w.stillHeld(work)
		if err != nil {
			return Reservation{}, fmt.Errorf("booking: reserve: check locks before commit: %w", err)
		}
		if !held {
			return Reservation{}, fmt.Errorf("booking: reserve: the seat locks lapsed before commit: %w", ErrLockLost)
		}
	}
	if err := tx.Commit(); err != nil {
		return Reservation{}, s.constraint(err, w.seats)
	}
	if w.committed != nil {
		w.committed()
	}
	// Counted after commit, not inside the transaction: two reservations committing side by side each see
	// only their own insert in there, and neither would notice it sold the last seat. After commit, the
	// later of them sees both.
	sold, err := countSold(ctx, s.db, w.screening)
	if err != nil {
		r.SeatsLeft = -1
		return r, &AfterCommitError{Err: fmt.Errorf("booking: reserve: count after commit: %w", err)}
	}
	r.SeatsLeft = w.total - sold
	return r, nil
}

// writeOnceSQL is a reservation's whole write on PostgreSQL, as one statement: one round trip where the
// statements of writeStatements take six or more, each of which a winner waits for while a burst holds
// the machine (docs/benchmarks.md). Its parts, in the order writeStatements runs them:
//   - f: the next fencing number;
//   - fenced: the seat rows it wrote its number on (those whose fence was lower; the UPDATE waits for a
//     row another transaction holds, then looks at the row as that transaction left it);
//   - sold, taken: the screening's sold count and which of the seats are sold;
//   - r, rs: the reservation and its seats, inserted only if every seat was fenced, a seat is left and
//     none of these is sold. A sale that committed after the statement began is not in sold or taken,
//     which read the statement's snapshot: the UNIQUE constraint stops the insert then.
//
// $1 screening, $2 seats, $3 the screening's seat count, $4 holder, $5 pass id, $6 created_at,
// $7 Idempotency-Key, $8 request hash.
const writeOnceSQL = `WITH f AS MATERIALIZED (SELECT nextval('seat_fence') AS fence),
fenced AS (
	UPDATE seats SET fence = f.fence FROM f
	WHERE seats.screening_id = $1::text AND seats.seat_id = ANY($2::text[]) AND seats.fence < f.fence
	RETURNING seats.seat_id),
sold AS (SELECT COUNT(*) AS n FROM reservation_seats WHERE screening_id = $1::text),
taken AS (SELECT seat_id FROM reservation_seats WHERE screening_id = $1::text AND seat_id = ANY($2::text[])),
ok AS (SELECT WHERE (SELECT COUNT(*) FROM fenced) = cardinality($2::text[])
	AND (SELECT n FROM sold) < $3::int AND NOT EXISTS (SELECT FROM taken)),
r AS (
	INSERT INTO reservations (screening_id, holder, pass_id, created_at, idempotency_key, request_hash)
	SELECT $1::text, $4::text, $5::text, $6::timestamptz, $7::text, $8::text FROM ok
	RETURNING id),
rs AS (
	INSERT INTO reservation_seats (reservation_id, screening_id, seat_id, fence)
	SELECT r.id, $1::text, seat, f.fence FROM r, f, unnest($2::text[]) AS seat)
SELECT (SELECT COUNT(*) FROM fenced) AS fenced, (SELECT n FROM sold) AS sold,
	ARRAY(SELECT seat_id FROM taken) AS taken, (SELECT id FROM r) AS id`

// writeOnce writes the reservation's rows in tx with writeOnceSQL and returns its id.
func (s *Store) writeOnce(ctx context.Context, tx *sqlx.Tx, w write, createdAt time.Time) (int64, error) {
	var out struct {
		Fenced int            `db:"fenced"`
		Sold   int            `db:"sold"`
		Taken  pq.StringArray `db:"taken"`
		ID     sql.NullInt64  `db:"id"`
	}
	err := tx.GetContext(ctx, &out, writeOnceSQL, w.screening, pq.Array(w.seats), w.total, w.holder, w.passID,
		createdAt, nullable(w.idempotencyKey), w.hash)
	if err != nil {
		return 0, s.constraint(err, w.seats)
	}
	if w.afterFence != nil {
		w.afterFence()
	}
	switch {
	case out.Fenced != len(w.seats):
		return 0, errFencedOut
	case out.Sold >= w.total:
		return 0, soldOut(w.screening)
	case len(out.Taken) > 0:
		sort.Strings(out.Taken) // in Go's order, as the seats were sorted, not in the database's collation
		return 0, &TakenError{Seats: out.Taken}
	case !out.ID.Valid:
		return 0, errors.New("booking: reserve: the write inserted nothing, for no reason it returned")
	}
	return out.ID.Int64, nil
}

// errFencedOut and soldOut are the refusals both ways of writing find: a newer holder's fence on one of the
// seats, and no seat left in the screening.
var errFencedOut = fmt.Errorf("booking: reserve: a newer holder fenced the seats: %w", ErrLockLost)

func soldOut(screening string) error {
	return fmt.Errorf("booking: reserve in %s: %w", screening, ErrSoldOut)
}

// writeStatements writes the reservation's rows in tx a statement at a time (SQLite, which has no
// data-modifying WITH) and returns its id.
func (s *Store) writeStatements(ctx context.Context, tx *sqlx.Tx, w write, createdAt time.Time) (int64, error) {
	fence, err := s.nextFence(ctx, tx)
	if err != nil {
		return 0, err
	}
	q, args, err := sqlx.In(`UPDATE seats SET fence = ? WHERE screening_id = ? AND seat_id IN (?) AND fence < ?`, fence, w.screening, w.seats, fence)
	if err != nil {
		return 0, fmt.Errorf("booking: reserve: %w", err)
	}
	res, err := tx.ExecContext(ctx, tx.Rebind(q), args...)
	if err != nil {
		return 0, fmt.Errorf("booking: reserve: fence: %w", err)
	}
	if n, _ := res.RowsAffected(); n != int64(len(w.seats)) {
		return 0, errFencedOut
	}
	if w.afterFence != nil {
		w.afterFence()
	}

	sold, err := countSold(ctx, tx, w.screening)
	if err != nil {
		return 0, fmt.Errorf("booking: reserve: %w", err)
	}
	if sold >= w.total {
		return 0, soldOut(w.screening)
	}
	taken, err := soldAmong(ctx, tx, w.screening, w.seats)
	if err != nil {
		return 0, fmt.Errorf("booking: reserve: %w", err)
	}
	if len(taken) > 0 {
		return 0, &TakenError{Seats: taken}
	}

	var id int64
	err = tx.GetContext(ctx, &id, tx.Rebind(`INSERT INTO reservations (screening_id, holder, pass_id, created_at, idempotency_key, request_hash)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING id`), w.screening, w.holder, w.passID, createdAt, nullable(w.idempotencyKey), w.hash)
	if err != nil {
		return 0, s.constraint(err, w.seats)
	}
	for _, seat := range w.seats {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO reservation_seats (reservation_id, screening_id, seat_id, fence)
			VALUES (?, ?, ?, ?)`), id, w.screening, seat, fence); err != nil {
			return 0, s.constraint(err, []string{seat})
		}
	}
	return id, nil
}

// soldOf names which of the seats are sold, for a write the UNIQUE constraint stopped with all of them in
// one statement: the sale it ran into has committed, so a read now sees it. If the read fails or finds none
// (sold and gone again since), the constraint's word stands for them all.
func (s *Store) soldOf(ctx context.Context, screening string, seats []string) *TakenError {
	sold, err := soldAmong(ctx, s.db, screening, seats)
	if err != nil || len(sold) == 0 {
		return &TakenError{Seats: seats}
	}
	return &TakenError{Seats: sold}
}

// nextFence takes the next fencing number from SQLite's sequences row (PostgreSQL's seat_fence sequence
// is read in writeOnceSQL).
func (s *Store) nextFence(ctx context.Context, tx *sqlx.Tx) (int64, error) {
	var fence int64
	if err := tx.GetContext(ctx, &fence, `UPDATE sequences SET value = value + 1 WHERE name = 'seat_fence' RETURNING value`); err != nil {
		return 0, fmt.Errorf("booking: reserve: fencing number: %w", err)
	}
	return fence, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// constraint turns a unique violation into the booking error it stands for.
func (s *Store) constraint(err error, seats []string) error {
	name := ""
	var pqErr *pq.Error
	var liteErr *sqlite.Error
	switch {
	case errors.As(err, &pqErr) && pqErr.Code == "23505":
		name = pqErr.Constraint
	case errors.As(err, &liteErr) && liteErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		switch msg := liteErr.Error(); {
		case strings.Contains(msg, "reservations.pass_id"):
			name = "reservations_pass_once"
		case strings.Contains(msg, "reservation_seats.screening_id"):
			name = "reservation_seats_once"
		}
	}
	switch name {
	case "reservations_pass_once":
		return fmt.Errorf("booking: reserve: %w", queue.ErrPassSpent)
	case "reservation_seats_once":
		return &TakenError{Seats: seats, byConstraint: len(seats) > 1}
	}
	return fmt.Errorf("booking: reserve: %w", err)
}
