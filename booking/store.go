package booking

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/waitroom/waitroom/queue"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations
var migrations embed.FS

func init() {
	// sqlx does not know modernc's driver name; it takes "?" placeholders.
	sqlx.BindDriver("sqlite", sqlx.QUESTION)
}

// Open connects to url: a postgres:// URL (lib/pq), or "sqlite:PATH" / a bare file path (modernc SQLite).
// An empty url opens dataDir/waitroom.db, the embedded default.
func Open(ctx context.Context, url, dataDir string) (*sqlx.DB, error) {
	driver, dsn := "postgres", url
	switch {
	case url == "":
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("booking: data dir: %w", err)
		}
		driver, dsn = "sqlite", filepath.Join(dataDir, "waitroom.db")
	case strings.HasPrefix(url, "sqlite:"):
		driver, dsn = "sqlite", strings.TrimPrefix(url, "sqlite:")
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
	default:
		return nil, fmt.Errorf("booking: database.url %q: want postgres://… or sqlite:PATH", url)
	}
	if driver == "postgres" && !strings.Contains(dsn, "binary_parameters=") {
		// lib/pq sends a statement with parameters as Parse+Describe, waits, then Bind+Execute: two round
		// trips. In binary-parameters mode it sends all of them at once: one round trip, as pgx and JDBC do.
		// A burst's winner waits for each of its round trips while the burst holds the machine
		// (docs/benchmarks.md).
		dsn = withParam(dsn, "binary_parameters=yes")
	}
	if driver == "sqlite" {
		// One writer at a time is SQLite's nature: a single connection serialises transactions in the pool
		// instead of failing them with SQLITE_BUSY; WAL lets the file be read while it is written.
		dsn = withParam(dsn, "_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_time_format=sqlite")
	}
	db, err := sqlx.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("booking: open: %w", err)
	}
	if driver == "sqlite" {
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(30)
		db.SetMaxIdleConns(30)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("booking: connect: %w", err)
	}
	return db, nil
}

// withParam appends a query parameter to a database URL or file name.
func withParam(dsn, param string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}

// Migrate brings the schema up to date. On PostgreSQL an advisory lock lets several instances start at once.
func Migrate(ctx context.Context, db *sqlx.DB) error {
	dialect, dir := goose.DialectPostgres, "migrations/postgres"
	var opts []goose.ProviderOption
	if db.DriverName() == "sqlite" {
		dialect, dir = goose.DialectSQLite3, "migrations/sqlite"
	} else {
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return fmt.Errorf("booking: migrate: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	fsys, err := fs.Sub(migrations, dir)
	if err != nil {
		return fmt.Errorf("booking: migrate: %w", err)
	}
	p, err := goose.NewProvider(dialect, db.DB, fsys, opts...)
	if err != nil {
		return fmt.Errorf("booking: migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("booking: migrate: %w", err)
	}
	return nil
}

// Screening is a show with its sale time.
type Screening struct {
	ID          string    `db:"id" json:"id"`
	Name        string    `db:"name" json:"name"`
	StartsAt    time.Time `db:"starts_at" json:"starts_at"`
	SaleOpensAt time.Time `db:"sale_opens_at" json:"sale_opens_at"`
}

// Summary is a screening with its seat counts.
type Summary struct {
	Screening
	SeatsTotal     int `db:"seats_total" json:"seats_total"`
	SeatsAvailable int `db:"seats_available" json:"seats_available"`
	// ClosedAt is when the operator closed the sale (nil while it is not closed).
	ClosedAt *time.Time `db:"closed_at" json:"closed_at,omitempty"`
}

// SeatStatus is one seat of the map.
type SeatStatus struct {
	ID     string `db:"seat_id" json:"id"`
	Row    string `db:"row_label" json:"row"`
	Number int    `db:"number" json:"number"`
	Status string `db:"status" json:"status"`
}

// Store is the SQL side: screenings, seats, reservations.
type Store struct {
	db *sqlx.DB
}

// NewStore returns the store kept in db (migrated).
func NewStore(db *sqlx.DB) *Store { return &Store{db: db} }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("booking: ping: %w", err)
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
	if n, _ := res.RowsAffected(); n == 0 {
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

const summarySQL = `SELECT s.id, s.name, s.starts_at, s.sale_opens_at, s.closed_at,
	(SELECT COUNT(*) FROM seats t WHERE t.screening_id = s.id) AS seats_total,
	(SELECT COUNT(*) FROM seats t WHERE t.screening_id = s.id) -
	(SELECT COUNT(*) FROM reservation_seats r WHERE r.screening_id = s.id) AS seats_available
	FROM screenings s`

// Screenings lists every screening with its seat counts, by start time.
func (s *Store) Screenings(ctx context.Context) ([]Summary, error) {
	out := []Summary{}
	if err := s.db.SelectContext(ctx, &out, summarySQL+` ORDER BY s.starts_at, s.id`); err != nil {
		return nil, fmt.Errorf("booking: screenings: %w", err)
	}
	return out, nil
}

// Screening returns one screening with its seat counts, or ErrUnknownScreening.
func (s *Store) Screening(ctx context.Context, id string) (Summary, error) {
	var out Summary
	err := s.db.GetContext(ctx, &out, s.db.Rebind(summarySQL+` WHERE s.id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return Summary{}, fmt.Errorf("booking: screening %q: %w", id, ErrUnknownScreening)
	}
	if err != nil {
		return Summary{}, fmt.Errorf("booking: screening %q: %w", id, err)
	}
	return out, nil
}

// Seats returns the seat map of a screening from SQL, in row and number order. Booking.Seats serves the
// map during a sale from caches; this is what fills them.
func (s *Store) Seats(ctx context.Context, screening string) ([]SeatStatus, error) {
	out := []SeatStatus{}
	err := s.db.SelectContext(ctx, &out, s.db.Rebind(`SELECT t.seat_id, t.row_label, t.number,
		CASE WHEN r.seat_id IS NULL THEN 'available' ELSE 'sold' END AS status
		FROM seats t LEFT JOIN reservation_seats r ON r.screening_id = t.screening_id AND r.seat_id = t.seat_id
		WHERE t.screening_id = ? ORDER BY LENGTH(t.row_label), t.row_label, t.number`), screening)
	if err != nil {
		return nil, fmt.Errorf("booking: seats of %s: %w", screening, err)
	}
	return out, nil
}

// catalog is a screening's seats, which never change once created: the map for checks, the list (in map
// order) for the seat map.
type catalog struct {
	ids     map[string]bool
	seats   []Seat
	opensAt time.Time // the sale time, which never changes either
}

// catalog loads the seats of a screening.
func (s *Store) catalog(ctx context.Context, screening string) (*catalog, error) {
	var seats []Seat
	err := s.db.SelectContext(ctx, &seats, s.db.Rebind(`SELECT seat_id, row_label, number FROM seats
		WHERE screening_id = ? ORDER BY LENGTH(row_label), row_label, number`), screening)
	if err != nil {
		return nil, fmt.Errorf("booking: catalog of %s: %w", screening, err)
	}
	if len(seats) == 0 {
		return nil, fmt.Errorf("booking: catalog of %q: %w", screening, ErrUnknownScreening)
	}
	c := &catalog{ids: make(map[string]bool, len(seats)), seats: seats}
	if err := s.db.GetContext(ctx, &c.opensAt, s.db.Rebind(`SELECT sale_opens_at FROM screenings WHERE id = ?`), screening); err != nil {
		return nil, fmt.Errorf("booking: catalog of %s: %w", screening, err)
	}
	for _, seat := range seats {
		c.ids[seat.ID] = true
	}
	return c, nil
}

// Reservation is a committed booking of one pass.
type Reservation struct {
	ID        int64     `json:"id"`
	Screening string    `json:"screening"`
	Seats     []string  `json:"seats"`
	CreatedAt time.Time `json:"created_at"`
	// SeatsLeft is how many seats of the screening are still available after this reservation (-1 when the
	// count failed after commit). Not sent: a replayed response must equal the first one.
	SeatsLeft int `json:"-"`
}

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

// soldAmong returns which of the seats are sold, sorted in Go's order (as the seats were), inside a
// transaction or not.
func soldAmong(ctx context.Context, q interface {
	sqlx.QueryerContext
	Rebind(string) string
}, screening string, seats []string) ([]string, error) {
	query, args, err := sqlx.In(`SELECT seat_id FROM reservation_seats WHERE screening_id = ? AND seat_id IN (?)`, screening, seats)
	if err != nil {
		return nil, err
	}
	var sold []string
	if err := sqlx.SelectContext(ctx, q, &sold, q.Rebind(query), args...); err != nil {
		return nil, err
	}
	sort.Strings(sold)
	return sold, nil
}

// countSold counts the sold seats of a screening, inside a transaction or not.
func countSold(ctx context.Context, q interface {
	sqlx.QueryerContext
	Rebind(string) string
}, screening string) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, q.Rebind(`SELECT COUNT(*) FROM reservation_seats WHERE screening_id = ?`), screening)
	return n, err
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

// byPass returns the reservation a pass made, with the Idempotency-Key and body hash of its request, or
// sql.ErrNoRows.
func (s *Store) byPass(ctx context.Context, passID string) (Reservation, string, string, error) {
	var row struct {
		ID        int64          `db:"id"`
		Screening string         `db:"screening_id"`
		CreatedAt time.Time      `db:"created_at"`
		Key       sql.NullString `db:"idempotency_key"`
		Hash      sql.NullString `db:"request_hash"`
	}
	err := s.db.GetContext(ctx, &row, s.db.Rebind(`SELECT id, screening_id, created_at, idempotency_key, request_hash
		FROM reservations WHERE pass_id = ?`), passID)
	if err != nil {
		return Reservation{}, "", "", err
	}
	// SeatsLeft is not known for a past reservation: -1, as when the count after commit failed.
	r := Reservation{ID: row.ID, Screening: row.Screening, CreatedAt: row.CreatedAt.UTC(), Seats: []string{}, SeatsLeft: -1}
	if err := s.db.SelectContext(ctx, &r.Seats, s.db.Rebind(`SELECT seat_id FROM reservation_seats WHERE reservation_id = ? ORDER BY seat_id`), r.ID); err != nil {
		return Reservation{}, "", "", err
	}
	return r, row.Key.String, row.Hash.String, nil
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

// Seat is one seat of a screening's catalog.
type Seat struct {
	ID     string `db:"seat_id"`
	Row    string `db:"row_label"`
	Number int    `db:"number"`
}

// Grid returns rows × perRow seats: rows A, B, … Z, AA, AB, …; seats numbered from 1 ("A1" … "J10").
func Grid(rows, perRow int) []Seat {
	seats := make([]Seat, 0, rows*perRow)
	for r := 0; r < rows; r++ {
		row := rowLabel(r)
		for n := 1; n <= perRow; n++ {
			seats = append(seats, Seat{ID: fmt.Sprintf("%s%d", row, n), Row: row, Number: n})
		}
	}
	return seats
}

func rowLabel(i int) string {
	label := ""
	for i++; i > 0; i = (i - 1) / 26 {
		label = string(rune('A'+(i-1)%26)) + label
	}
	return label
}
