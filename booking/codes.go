// A screening's access codes: the one-time codes the operator issues and the one shared code, whether the
// screening requires one, and the claim of a code by the token that takes a place with it.

package booking

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrCodeInvalid: the code is not one of the screening's (unknown, malformed or revoked).
	ErrCodeInvalid = errors.New("access code not valid")
	// ErrCodeUsed: the one-time code let another token in already.
	ErrCodeUsed = errors.New("access code already used")
	// ErrCodeSpent: the one-time code's place ended in a reservation: it admits nobody again, its own
	// token included.
	ErrCodeSpent = errors.New("access code spent on a reservation")
	// ErrUnknownCode: the screening has no such one-time code (nor is it the shared code).
	ErrUnknownCode = errors.New("no such access code")
)

const (
	// codeAlphabet is Crockford's base32: no I, L, O or U, so a code read aloud or typed is not misread.
	codeAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	// codeLength is a one-time code's length in characters: 60 random bits.
	codeLength = 12
	// MaxCodesPerIssue bounds one IssueCodes call.
	MaxCodesPerIssue = 10_000
	// sharedCodeMin and sharedCodeMax bound a shared code's length, normalized: ten letters and digits are
	// some 50 bits, out of reach of guessing at the per-address pace of wrong codes (limits.wrong_codes_per_minute).
	sharedCodeMin, sharedCodeMax = 10, 64
	// codesPerInsert is how many codes one INSERT writes: 3 parameters each, well under SQLite's 32,766.
	codesPerInsert = 500
)

// The states of a one-time code, as Codes lists them.
const (
	CodeUnused  = "unused"
	CodeUsed    = "used"
	CodeRevoked = "revoked"
)

// AccessCode is one one-time code as the operator sees it: Code formatted (XXXX-XXXX-XXXX), its State
// (CodeUnused, CodeUsed or CodeRevoked: revoked wins over used), and UsedAt when a token took a place with it.
type AccessCode struct {
	Code      string
	State     string
	CreatedAt time.Time
	UsedAt    *time.Time
}

// Access is what a socket needs to know of a screening's codes before it takes a place.
type Access struct {
	// CodesRequired: a socket without a place needs a code (ClaimCode) to take one.
	CodesRequired bool
	// Shared: the screening has a shared code.
	Shared bool
}

// NormalizeCode is a code as it is stored and compared: upper case, without dashes and spaces.
func NormalizeCode(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(s))
}

// FormatCode shows a normalized one-time code in groups of four (XXXX-XXXX-XXXX); anything else is returned
// as it is.
func FormatCode(c string) string {
	if len(c) != codeLength {
		return c
	}
	return c[:4] + "-" + c[4:8] + "-" + c[8:]
}

// NewCode returns a fresh one-time code, normalized: 12 characters of Crockford base32 from crypto/rand.
func NewCode() string {
	var b [codeLength]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥ 1.24 it panics instead).
	for i := range b {
		b[i] = codeAlphabet[b[i]%32] // 256 is a multiple of 32: every character equally likely
	}
	return string(b[:])
}

// oneTimeShape reports whether c (normalized) can be a one-time code.
func oneTimeShape(c string) bool {
	if len(c) != codeLength {
		return false
	}
	for i := 0; i < len(c); i++ {
		if strings.IndexByte(codeAlphabet, c[i]) < 0 {
			return false
		}
	}
	return true
}

// IssueCodes makes n fresh one-time codes for the screening in one transaction, and requires a code from
// then on. It returns them formatted; only the caller ever sees them whole.
func (s *Store) IssueCodes(ctx context.Context, screening string, n int) ([]string, error) {
	if n < 1 || n > MaxCodesPerIssue {
		return nil, badScreening("count %d: issue 1 to %d codes at a time", n, MaxCodesPerIssue)
	}
	codes := make([]string, 0, n)
	seen := make(map[string]bool, n)
	for len(codes) < n {
		if c := NewCode(); !seen[c] {
			seen[c] = true
			codes = append(codes, c)
		}
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("booking: issue codes for %s: %w", screening, err)
	}
	defer tx.Rollback()
	if err := requireCodes(ctx, tx, screening); err != nil {
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for start := 0; start < len(codes); start += codesPerInsert {
		batch := codes[start:min(start+codesPerInsert, len(codes))]
		args := make([]any, 0, 3*len(batch))
		for _, c := range batch {
			args = append(args, screening, c, now)
		}
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(batch)), ", ")
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO access_codes (screening_id, code, created_at) VALUES `+values), args...); err != nil {
			return nil, fmt.Errorf("booking: issue codes for %s: %w", screening, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("booking: issue codes for %s: %w", screening, err)
	}
	for i, c := range codes {
		codes[i] = FormatCode(c)
	}
	return codes, nil
}

// requireCodes makes the screening require a code, in tx, or says it is unknown.
func requireCodes(ctx context.Context, tx *tx, screening string) error {
	res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE screenings SET codes_required = TRUE WHERE id = ?`), screening)
	if err != nil {
		return fmt.Errorf("booking: require codes of %s: %w", screening, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: require codes of %s: %w", screening, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: codes of %q: %w", truncate(screening, 64), ErrUnknownScreening)
	}
	return nil
}

// SetSharedCode makes code the screening's shared code, which lets in any number of tokens, and requires a
// code from then on. A shared code is 10 to 64 letters and digits once normalized (NormalizeCode). An empty
// code removes the shared code and leaves codes_required as it is.
func (s *Store) SetSharedCode(ctx context.Context, screening, code string) error {
	code = NormalizeCode(code)
	if code == "" {
		return s.updateScreening(ctx, screening, "remove shared code", `UPDATE screenings SET shared_code = NULL WHERE id = ?`)
	}
	if len(code) < sharedCodeMin || len(code) > sharedCodeMax || strings.IndexFunc(code, notCodeChar) >= 0 {
		return badScreening("shared code: want %d to %d letters A-Z and digits (dashes and spaces are ignored)", sharedCodeMin, sharedCodeMax)
	}
	return s.updateScreening(ctx, screening, "set shared code",
		`UPDATE screenings SET shared_code = ?, codes_required = TRUE WHERE id = ?`, code)
}

func notCodeChar(r rune) bool { return (r < 'A' || r > 'Z') && (r < '0' || r > '9') }

// SetCodesRequired says whether a socket without a place needs a code to take one. Turning it off lets
// everyone in again; the codes stay, and turning it on again brings them back.
func (s *Store) SetCodesRequired(ctx context.Context, screening string, on bool) error {
	return s.updateScreening(ctx, screening, "codes required", `UPDATE screenings SET codes_required = ? WHERE id = ?`, on)
}

// updateScreening runs an UPDATE of one screening row whose last parameter is the screening's id.
func (s *Store) updateScreening(ctx context.Context, screening, what, query string, args ...any) error {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(query), append(args, screening)...)
	if err != nil {
		return fmt.Errorf("booking: %s of %s: %w", what, screening, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: %s of %s: %w", what, screening, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: %s of %q: %w", what, truncate(screening, 64), ErrUnknownScreening)
	}
	return nil
}

// Access reads whether the screening requires a code and has a shared one: one row, what a socket checks
// before it asks for a code.
func (s *Store) Access(ctx context.Context, screening string) (Access, error) {
	var row struct {
		Required bool           `db:"codes_required"`
		Shared   sql.NullString `db:"shared_code"`
	}
	err := s.db.GetContext(ctx, &row, s.db.Rebind(`SELECT codes_required, shared_code FROM screenings WHERE id = ?`), screening)
	if err != nil {
		return Access{}, codesReadError(screening, err)
	}
	return Access{CodesRequired: row.Required, Shared: row.Shared.Valid}, nil
}

// sharedCode reads the screening's shared code (not valid: none), all that claiming or revoking a code
// needs of the screening's row.
func (s *Store) sharedCode(ctx context.Context, screening string) (sql.NullString, error) {
	var shared sql.NullString
	err := s.db.GetContext(ctx, &shared, s.db.Rebind(`SELECT shared_code FROM screenings WHERE id = ?`), screening)
	if err != nil {
		return shared, codesReadError(screening, err)
	}
	return shared, nil
}

// codesReadError is the error of a failed read of the screening's row: ErrUnknownScreening for no row.
func codesReadError(screening string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("booking: codes of %q: %w", truncate(screening, 64), ErrUnknownScreening)
	}
	return fmt.Errorf("booking: codes of %s: %w", screening, err)
}

// RevokeCode stops a code letting anyone in: a one-time code is marked revoked and stays listed as such
// (revoking it twice is no error); the shared code is removed. ErrUnknownCode when it is neither.
func (s *Store) RevokeCode(ctx context.Context, screening, code string) error {
	code = NormalizeCode(code)
	shared, err := s.sharedCode(ctx, screening)
	if err != nil {
		return err
	}
	if shared.Valid && shared.String == code {
		return s.updateScreening(ctx, screening, "revoke shared code", `UPDATE screenings SET shared_code = NULL WHERE id = ?`)
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE access_codes SET revoked_at = COALESCE(revoked_at, ?)
		WHERE screening_id = ? AND code = ?`), time.Now().UTC().Truncate(time.Microsecond), screening, code)
	if err != nil {
		return fmt.Errorf("booking: revoke code of %s: %w", screening, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: revoke code of %s: %w", screening, err)
	}
	if n == 0 {
		return fmt.Errorf("booking: revoke code of %s: %w", screening, ErrUnknownCode)
	}
	return nil
}

// Codes lists the screening's one-time codes, oldest first (then by code). The screening's row is joined
// in the same query, so an unknown screening (no row at all) is told from one without codes (one row
// whose code is NULL) without a second read.
func (s *Store) Codes(ctx context.Context, screening string) ([]AccessCode, error) {
	var rows []struct {
		Code      sql.NullString `db:"code"`
		CreatedAt sql.NullTime   `db:"created_at"`
		UsedBy    *string        `db:"used_by"`
		UsedAt    sql.NullTime   `db:"used_at"`
		RevokedAt sql.NullTime   `db:"revoked_at"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT c.code, c.created_at, c.used_by, c.used_at, c.revoked_at
		FROM screenings s LEFT JOIN access_codes c ON c.screening_id = s.id
		WHERE s.id = ? ORDER BY c.created_at, c.code`), screening)
	if err != nil {
		return nil, fmt.Errorf("booking: codes of %s: %w", screening, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("booking: codes of %q: %w", truncate(screening, 64), ErrUnknownScreening)
	}
	if !rows[0].Code.Valid {
		return []AccessCode{}, nil
	}
	out := make([]AccessCode, len(rows))
	for i, r := range rows {
		out[i] = AccessCode{Code: FormatCode(r.Code.String), State: CodeUnused, CreatedAt: r.CreatedAt.Time.UTC()}
		if r.UsedAt.Valid {
			at := r.UsedAt.Time.UTC()
			out[i].UsedAt = &at
		}
		switch {
		case r.RevokedAt.Valid:
			out[i].State = CodeRevoked
		case r.UsedBy != nil:
			out[i].State = CodeUsed
		}
	}
	return out, nil
}

// ClaimCode lets token in with code, or says why not. The shared code lets in anyone (compared in constant
// time). A one-time code lets in the first token that claims it, which it then belongs to, and that token
// again (a retry after a lost answer, a return after its place lapsed) until the token has reserved in the
// screening: a code admits one place that buys, and a held order that lapsed or was cancelled gives back its
// seats, not the code. Of two tokens claiming a code at once, exactly one wins, by the conditional UPDATE.
// ErrCodeInvalid for a code that is not the screening's or was revoked, ErrCodeUsed for one another token
// took, ErrCodeSpent for one whose token has reserved.
func (s *Store) ClaimCode(ctx context.Context, screening, code, token string) error {
	if token == "" {
		return fmt.Errorf("booking: claim code of %s: no token", screening)
	}
	code = NormalizeCode(code)
	shared, err := s.sharedCode(ctx, screening)
	if err != nil {
		return err
	}
	if shared.Valid && code != "" && subtle.ConstantTimeCompare([]byte(code), []byte(shared.String)) == 1 {
		return nil
	}
	if !oneTimeShape(code) {
		return fmt.Errorf("booking: claim code of %s: %w", screening, ErrCodeInvalid)
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE access_codes SET used_by = ?, used_at = ?
		WHERE screening_id = ? AND code = ? AND used_by IS NULL AND revoked_at IS NULL`),
		token, time.Now().UTC().Truncate(time.Microsecond), screening, code)
	if err != nil {
		return fmt.Errorf("booking: claim code of %s: %w", screening, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("booking: claim code of %s: %w", screening, err)
	}
	if n == 1 {
		return nil
	}
	var held struct {
		UsedBy    sql.NullString `db:"used_by"`
		RevokedAt sql.NullTime   `db:"revoked_at"`
	}
	err = s.db.GetContext(ctx, &held, s.db.Rebind(`SELECT used_by, revoked_at FROM access_codes
		WHERE screening_id = ? AND code = ?`), screening, code)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && held.RevokedAt.Valid:
		return fmt.Errorf("booking: claim code of %s: %w", screening, ErrCodeInvalid)
	case err != nil:
		return fmt.Errorf("booking: claim code of %s: %w", screening, err)
	case held.UsedBy.String != token:
		return fmt.Errorf("booking: claim code of %s: %w", screening, ErrCodeUsed)
	}
	var reserved bool
	err = s.db.GetContext(ctx, &reserved, s.db.Rebind(`SELECT EXISTS (SELECT 1 FROM reservations
		WHERE screening_id = ? AND holder = ?)`), screening, token)
	switch {
	case err != nil:
		return fmt.Errorf("booking: claim code of %s: %w", screening, err)
	case reserved:
		return fmt.Errorf("booking: claim code of %s: %w", screening, ErrCodeSpent)
	}
	return nil
}

// ReleaseCode gives back token's claim of a one-time code, for a place that could not be registered after
// the claim: the code is unused again. A code token does not hold (or the shared code) is left as it is.
func (s *Store) ReleaseCode(ctx context.Context, screening, code, token string) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE access_codes SET used_by = NULL, used_at = NULL
		WHERE screening_id = ? AND code = ? AND used_by = ?`), screening, NormalizeCode(code), token)
	if err != nil {
		return fmt.Errorf("booking: release code of %s: %w", screening, err)
	}
	return nil
}
