// A reservation's write: one transaction in steps booking drives (begin, fence, insert, commit), each of
// which says what it found: fenced out, a seat sold, the screening sold out, the pass spent. The database's
// constraints have the last word.

package booking

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/webhook"
)

// write is one reservation to write.
type write struct {
	screening, holder, passID string
	seats                     []string // sorted, known
	total                     int      // the screening's seat count
	idempotencyKey, hash      string
	code                      string        // the order's code
	checkout                  string        // the server's checkout mode (Booking.Checkout), for a screening without its own
	holdTTL                   time.Duration // how long a held order keeps its seats
	webhooks                  bool          // write the order's first transition to the outbox
}

// writeTx is one reservation's write in its transaction. Booking drives its steps (begin, fence, insert,
// commit, or rollback) and decides what happens between them; each step says what it found, and the store
// decides nothing else.
//
// The fence step takes the next fencing number and writes it on the seat rows only where it is higher than
// what is there, so a lock holder whose lease ran out never writes over a newer holder's work
// (ErrLockLost). The insert step refuses seats already sold (ErrSeatTaken, by a read, or by the UNIQUE
// constraint if a race slipped past the Redis locks), a pass that already reserved (ErrPassSpent) and a
// screening with no seat left (ErrSoldOut).
//
// On PostgreSQL the fence step sends the whole write as one statement (writeOnceSQL) and the insert step
// reads what it did; on SQLite, which has no data-modifying WITH, the fence step writes the fence and the
// insert step reads and inserts a statement at a time.
type writeTx struct {
	s         *Store
	tx        *tx
	w         write
	createdAt time.Time
	fencing   int64     // SQLite: the fencing number the fence step wrote
	once      onceWrite // PostgreSQL: what writeOnceSQL did
}

// begin opens the transaction of w. It lasts as long as ctx: the caller bounds the statements before the
// commit (a slow database answers 503, not after minutes), never the commit, so a commit is never cut off
// half-known.
func (s *Store) begin(ctx context.Context, w write) (*writeTx, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("booking: reserve: %w", err)
	}
	return &writeTx{s: s, tx: tx, w: w, createdAt: s.now().UTC().Truncate(time.Microsecond)}, nil
}

// fence writes the fencing number on the seat rows: errFencedOut when a newer holder's is on one of them
// (on PostgreSQL, the insert step tells it).
func (t *writeTx) fence(ctx context.Context) error {
	if t.s.db.DriverName() == "postgres" {
		return t.named(ctx, t.writeOnce(ctx))
	}
	return t.named(ctx, t.fenceStatements(ctx))
}

// insert writes the reservation and its seats and returns it, its SeatsLeft not yet known (a count before
// commit cannot see the sales that commit beside it).
func (t *writeTx) insert(ctx context.Context) (Reservation, error) {
	var id int64
	var status string
	var err error
	if t.s.db.DriverName() == "postgres" {
		id, err = t.once.reservationID(t.w)
		status = t.once.Status.String
	} else {
		id, status, err = t.insertStatements(ctx)
	}
	if err != nil {
		return Reservation{}, t.named(ctx, err)
	}
	r := Reservation{ID: id, Code: t.w.code, Status: status, Screening: t.w.screening,
		Seats: SortSeatIDs(slices.Clone(t.w.seats)), CreatedAt: t.createdAt}
	if status == StatusHeld {
		until := t.holdUntil()
		r.HoldExpiresAt = &until
	} else {
		r.ConfirmedAt = &r.CreatedAt
	}
	if t.w.webhooks {
		if err := webhook.Enqueue(ctx, t.tx, webhook.NewMsgID(), "order."+r.Status, r); err != nil {
			return Reservation{}, err
		}
	}
	return r, nil
}

// holdUntil is when the order of this write lapses, if it is held.
func (t *writeTx) holdUntil() time.Time { return t.createdAt.Add(t.w.holdTTL) }

// commit commits the write; a unique violation at commit is the booking error it stands for.
func (t *writeTx) commit() error {
	if err := t.tx.Commit(); err != nil {
		return t.s.constraint(err, t.w.seats)
	}
	return nil
}

// rollback ends the transaction unless it was committed or rolled back already.
func (t *writeTx) rollback() { _ = t.tx.Rollback() }

// named turns the UNIQUE constraint's refusal of seats written together into the seats that are sold: the
// transaction is rolled back, and soldOf reads which (the sale it ran into has committed). Any other error
// is returned as it is.
func (t *writeTx) named(ctx context.Context, err error) error {
	var taken *TakenError
	if errors.As(err, &taken) && taken.byConstraint {
		_ = t.tx.Rollback()
		return t.s.soldOf(ctx, t.w.screening, t.w.seats)
	}
	return err
}

// writeOnceSQL is a reservation's whole write on PostgreSQL, as one statement: one round trip where the
// statements of fenceStatements and insertStatements take six or more, each of which a winner waits for while a burst holds
// the machine (docs/benchmarks.md). Its parts, in the order those run them:
//   - f: the next fencing number;
//   - fenced: the seat rows it wrote its number on (those whose fence was lower; the UPDATE waits for a
//     row another transaction holds, then looks at the row as that transaction left it);
//   - sold, taken: the screening's sold count and which of the seats are sold;
//   - r, rs: the reservation and its seats, inserted only if every seat was fenced, a seat is left and
//     none of these is sold. A sale that committed after the statement began is not in sold or taken,
//     which read the statement's snapshot: the UNIQUE constraint stops the insert then.
//
// The order is held (until $11) when the screening's checkout mode, or the server's ($10) for a screening
// without one, is 'hold'; confirmed as it is made otherwise. Sold and taken count the live seats: those of
// held and confirmed orders.
//
// $1 screening, $2 seats, $3 the screening's seat count, $4 holder, $5 pass id, $6 created_at,
// $7 Idempotency-Key, $8 request hash, $9 order code, $10 the server's checkout mode, $11 the hold's expiry.
const writeOnceSQL = `WITH f AS MATERIALIZED (SELECT nextval('seat_fence') AS fence),
m AS (SELECT COALESCE((SELECT checkout FROM screenings WHERE id = $1::text), $10::text) = 'hold' AS hold),
fenced AS (
	UPDATE seats SET fence = f.fence FROM f
	WHERE seats.screening_id = $1::text AND seats.seat_id = ANY($2::text[]) AND seats.fence < f.fence
	RETURNING seats.seat_id),
sold AS (SELECT COUNT(*) AS n FROM reservation_seats WHERE screening_id = $1::text AND live),
taken AS (SELECT seat_id FROM reservation_seats WHERE screening_id = $1::text AND seat_id = ANY($2::text[]) AND live),
ok AS (SELECT WHERE (SELECT COUNT(*) FROM fenced) = cardinality($2::text[])
	AND (SELECT n FROM sold) < $3::int AND NOT EXISTS (SELECT FROM taken)),
r AS (
	INSERT INTO reservations (screening_id, holder, pass_id, created_at, idempotency_key, request_hash, code, status,
		hold_expires_at, confirmed_at)
	SELECT $1::text, $4::text, $5::text, $6::timestamptz, $7::text, $8::text, $9::text,
		CASE WHEN m.hold THEN 'held' ELSE 'confirmed' END,
		CASE WHEN m.hold THEN $11::timestamptz END, CASE WHEN NOT m.hold THEN $6::timestamptz END FROM ok, m
	RETURNING id, status),
rs AS (
	INSERT INTO reservation_seats (reservation_id, screening_id, seat_id, fence)
	SELECT r.id, $1::text, seat, f.fence FROM r, f, unnest($2::text[]) AS seat)
SELECT (SELECT COUNT(*) FROM fenced) AS fenced, (SELECT n FROM sold) AS sold,
	ARRAY(SELECT seat_id FROM taken) AS taken, (SELECT id FROM r) AS id, (SELECT status FROM r) AS status`

// onceWrite is what writeOnceSQL did.
type onceWrite struct {
	Fenced int            `db:"fenced"`
	Sold   int            `db:"sold"`
	Taken  pq.StringArray `db:"taken"`
	ID     sql.NullInt64  `db:"id"`
	Status sql.NullString `db:"status"`
}

// writeOnce writes the reservation's rows with writeOnceSQL and keeps what it did for the insert step.
func (t *writeTx) writeOnce(ctx context.Context) error {
	w := t.w
	err := t.tx.GetContext(ctx, &t.once, writeOnceSQL, w.screening, pq.Array(w.seats), w.total, w.holder, w.passID,
		t.createdAt, nullable(w.idempotencyKey), w.hash, w.code, w.checkout, t.holdUntil())
	if err != nil {
		return t.s.constraint(err, w.seats)
	}
	return nil
}

// reservationID reads what writeOnceSQL did, in the order insertStatements would find it: the id of the
// reservation it inserted, or why it inserted none.
func (o *onceWrite) reservationID(w write) (int64, error) {
	switch {
	case o.Fenced != len(w.seats):
		return 0, errFencedOut
	case o.Sold >= w.total:
		return 0, soldOut(w.screening)
	case len(o.Taken) > 0:
		sort.Strings(o.Taken) // in Go's order, as the seats were sorted, not in the database's collation
		return 0, &TakenError{Seats: o.Taken}
	case !o.ID.Valid:
		return 0, errors.New("booking: reserve: the write inserted nothing, for no reason it returned")
	}
	return o.ID.Int64, nil
}

// errFencedOut and soldOut are the refusals both ways of writing find: a newer holder's fence on one of the
// seats, and no seat left in the screening.
var errFencedOut = fmt.Errorf("booking: reserve: a newer holder fenced the seats: %w", ErrLockLost)

func soldOut(screening string) error {
	return fmt.Errorf("booking: reserve in %s: %w", screening, ErrSoldOut)
}

// fenceStatements takes the next fencing number and writes it on the seat rows, a statement at a time
// (SQLite).
func (t *writeTx) fenceStatements(ctx context.Context) error {
	w, tx := t.w, t.tx
	fence, err := t.s.nextFence(ctx, tx)
	if err != nil {
		return err
	}
	q, args, err := sqlx.In(`UPDATE seats SET fence = ? WHERE screening_id = ? AND seat_id IN (?) AND fence < ?`, fence, w.screening, w.seats, fence)
	if err != nil {
		return fmt.Errorf("booking: reserve: %w", err)
	}
	res, err := tx.ExecContext(ctx, tx.Rebind(q), args...)
	if err != nil {
		return fmt.Errorf("booking: reserve: fence: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: reserve: fence: %w", err)
	}
	if n != int64(len(w.seats)) {
		return errFencedOut
	}
	t.fencing = fence
	return nil
}

// insertStatements writes the reservation's rows after fenceStatements, a statement at a time (SQLite), and
// returns its id and status.
func (t *writeTx) insertStatements(ctx context.Context) (int64, string, error) {
	w, tx, s := t.w, t.tx, t.s
	sold, err := countSold(ctx, tx, w.screening)
	if err != nil {
		return 0, "", fmt.Errorf("booking: reserve: %w", err)
	}
	if sold >= w.total {
		return 0, "", soldOut(w.screening)
	}
	taken, err := soldAmong(ctx, tx, w.screening, w.seats)
	if err != nil {
		return 0, "", fmt.Errorf("booking: reserve: %w", err)
	}
	if len(taken) > 0 {
		return 0, "", &TakenError{Seats: taken}
	}
	var mode string
	if err := tx.GetContext(ctx, &mode, tx.Rebind(`SELECT COALESCE(checkout, ?) FROM screenings WHERE id = ?`), w.checkout, w.screening); err != nil {
		return 0, "", fmt.Errorf("booking: reserve: checkout mode: %w", err)
	}
	status, holdUntil, confirmedAt := StatusConfirmed, any(nil), any(t.createdAt)
	if mode == CheckoutHold {
		status, holdUntil, confirmedAt = StatusHeld, t.holdUntil(), nil
	}
	var id int64
	err = tx.GetContext(ctx, &id, tx.Rebind(`INSERT INTO reservations (screening_id, holder, pass_id, created_at, idempotency_key, request_hash,
		code, status, hold_expires_at, confirmed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), w.screening, w.holder, w.passID, t.createdAt, nullable(w.idempotencyKey), w.hash,
		w.code, status, holdUntil, confirmedAt)
	if err != nil {
		return 0, "", s.constraint(err, w.seats)
	}
	for _, seat := range w.seats {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO reservation_seats (reservation_id, screening_id, seat_id, fence)
			VALUES (?, ?, ?, ?)`), id, w.screening, seat, t.fencing); err != nil {
			return 0, "", s.constraint(err, []string{seat})
		}
	}
	return id, status, nil
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
func (s *Store) nextFence(ctx context.Context, tx *tx) (int64, error) {
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
