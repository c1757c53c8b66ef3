package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
)

var (
	// ErrInvalidPass covers every pass that must not reserve: bad signature, wrong algorithm, wrong
	// screening, expired, or malformed.
	ErrInvalidPass = errors.New("invalid pass")
	// ErrNotActive means the pass is well signed but its admission is over (expired or left).
	ErrNotActive = errors.New("admission no longer active")
	// ErrPassSpent means the pass already reserved.
	ErrPassSpent = errors.New("pass already used")
)

// Claims is what a verified pass says.
type Claims struct {
	// ID is the pass id (jti): the same for every copy of the pass of one admission.
	ID        string
	Token     string
	Screening string
	ExpiresAt time.Time
}

// Passes signs and checks admission passes: HS256 JWTs with sub = queue token, aud = screening,
// adm = the admission's expiry in Unix ms (it names the admission: no two admissions of a token share it),
// exp = adm up to the whole second (JWT's precision; the slot, checked by CheckPass, is the authority on the
// last fraction of a second), jti = the admission's id, derived from screening, token and adm.
type Passes struct {
	secret []byte
	// parser checks the algorithm, the signature's spelling and the expiry; Verify checks the audience. One
	// parser serves every pass (it keeps no state of its own between calls).
	parser *jwt.Parser
	key    jwt.Keyfunc
}

// NewPasses returns passes signed with secret (every instance behind one Redis must share it).
func NewPasses(secret []byte) *Passes {
	p := &Passes{secret: secret, parser: jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithStrictDecoding())}
	p.key = func(*jwt.Token) (any, error) { return p.secret, nil }
	return p
}

// PassID names one admission of token to screening by its exact expiry: a reconnecting user gets the same
// pass id again, and a later admission of the same token (a later tick, so a later expiry) gets another.
func PassID(screening, token string, expiresAt time.Time) string {
	sum := sha256.Sum256([]byte(screening + "\x00" + token + "\x00" + strconv.FormatInt(expiresAt.UnixMilli(), 10)))
	return hex.EncodeToString(sum[:16])
}

// passClaims is a pass's JWT payload: the registered claims a pass uses, under their JSON names, and adm.
// The times are plain integers, as this server writes them, and the audience is a list of one: decoding
// jwt.RegisteredClaims' NumericDate and ClaimStrings runs json.Unmarshal again for each, and in a burst of a
// thousand reservations that made the pass check a third of the server's CPU (docs/benchmarks.md).
type passClaims struct {
	Subject   string   `json:"sub"`
	Audience  []string `json:"aud"`
	ExpiresAt int64    `json:"exp"` // Unix s; 0: absent, which the parser refuses
	IssuedAt  int64    `json:"iat"` // Unix s
	ID        string   `json:"jti"`
	// AdmissionMs is the admission's expiry in Unix ms, exactly as the active set holds it.
	AdmissionMs int64 `json:"adm"`
}

// The jwt.Claims methods the parser's validator reads.

func (c *passClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return numericDate(c.ExpiresAt), nil
}
func (c *passClaims) GetIssuedAt() (*jwt.NumericDate, error)  { return numericDate(c.IssuedAt), nil }
func (c *passClaims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }
func (c *passClaims) GetIssuer() (string, error)              { return "", nil }
func (c *passClaims) GetSubject() (string, error)             { return c.Subject, nil }
func (c *passClaims) GetAudience() (jwt.ClaimStrings, error)  { return c.Audience, nil }

// numericDate is Unix second s as a JWT time; nil for 0 (absent).
func numericDate(s int64) *jwt.NumericDate {
	if s == 0 {
		return nil
	}
	return jwt.NewNumericDate(time.Unix(s, 0))
}

// Issue signs the pass of token's admission to screening, valid until expiresAt.
func (p *Passes) Issue(screening, token string, expiresAt time.Time) (string, error) {
	claims := &passClaims{
		Subject:     token,
		Audience:    []string{screening},
		ExpiresAt:   ceilSecond(expiresAt).Unix(),
		IssuedAt:    time.Now().Unix(),
		ID:          PassID(screening, token, expiresAt),
		AdmissionMs: expiresAt.UnixMilli(),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(p.secret)
	if err != nil {
		return "", fmt.Errorf("queue: sign pass: %w", err)
	}
	return s, nil
}

// ceilSecond rounds t up to the whole second.
func ceilSecond(t time.Time) time.Time {
	if down := t.Truncate(time.Second); !down.Equal(t) {
		return down.Add(time.Second)
	}
	return t
}

// Verify checks pass's signature, algorithm, expiry and audience (it must be for screening) and returns its
// claims, or an error wrapping ErrInvalidPass.
func (p *Passes) Verify(pass, screening string) (Claims, error) {
	var pc passClaims
	// Strict decoding: a signature must be the one canonical base64url spelling of its bytes.
	if _, err := p.parser.ParseWithClaims(pass, &pc, p.key); err != nil {
		return Claims{}, fmt.Errorf("queue: %w: %v", ErrInvalidPass, err)
	}
	if len(pc.Audience) != 1 || pc.Audience[0] != screening {
		return Claims{}, fmt.Errorf("queue: %w: not a pass for screening %q", ErrInvalidPass, screening)
	}
	adm := time.UnixMilli(pc.AdmissionMs)
	if !ValidToken(pc.Subject) || pc.ID != PassID(screening, pc.Subject, adm) || pc.ExpiresAt != ceilSecond(adm).Unix() {
		return Claims{}, fmt.Errorf("queue: %w: malformed claims", ErrInvalidPass)
	}
	return Claims{ID: pc.ID, Token: pc.Subject, Screening: screening, ExpiresAt: adm}, nil
}

// CheckPass tells whether a verified pass may reserve now: its admission must still hold the slot
// (ErrNotActive otherwise) and it must not have reserved already (ErrPassSpent).
func (q *Queue) CheckPass(ctx context.Context, c Claims) error {
	_, err := q.CheckPassLine(ctx, c)
	return err
}

// CheckPassLine is CheckPass that also reports, from the same round trip, whether the screening's line is
// closed (sold out, or closed by the operator). Checks that arrive together share a pipeline (batcher): a
// burst of reservations checks a thousand passes at once.
func (q *Queue) CheckPassLine(ctx context.Context, c Claims) (closed bool, err error) {
	k := q.keys(c.Screening)
	pc := &passCheck{active: k.active, spent: k.spent, closed: k.closed, token: c.Token, id: c.ID, done: make(chan struct{})}
	q.checks.add(pc)
	select {
	case <-pc.done:
	case <-ctx.Done():
		return false, fmt.Errorf("queue: check pass: %w", ctx.Err())
	}
	if pc.err != nil {
		return false, fmt.Errorf("queue: check pass: %w", pc.err)
	}
	closed = pc.isClosed
	if pc.spentFound {
		return closed, fmt.Errorf("queue: check pass: %w", ErrPassSpent)
	}
	if !pc.held || pc.heldUntil != c.ExpiresAt.UnixMilli() || !c.ExpiresAt.After(q.now()) {
		return closed, fmt.Errorf("queue: check pass: %w", ErrNotActive)
	}
	return closed, nil
}

// passCheck is one CheckPassLine on its way: the keys and members it reads, and what Redis answered.
type passCheck struct {
	active, spent, closed string
	token, id             string
	done                  chan struct{}

	held       bool  // the token holds a slot (its score is heldUntil)
	heldUntil  int64 // Unix ms
	spentFound bool  // the pass id is among the spent
	isClosed   bool
	err        error
}

// sendChecks reads every check of batch in one pipeline: for each, the token's slot and the pass's spent
// mark; and once per screening, after them, the line's closing (a burst's thousand checks are mostly of
// one screening: one EXISTS instead of a thousand).
func (q *Queue) sendChecks(batch []*passCheck) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	type reads struct {
		held, spent *redis.FloatCmd
	}
	cmds := make([]reads, len(batch))
	closed := make(map[string]*redis.IntCmd, 1)
	pipe := q.rdb.Pipeline()
	for i, c := range batch {
		cmds[i] = reads{held: pipe.ZScore(ctx, c.active, c.token), spent: pipe.ZScore(ctx, c.spent, c.id)}
	}
	for _, c := range batch {
		if closed[c.closed] == nil {
			closed[c.closed] = pipe.Exists(ctx, c.closed)
		}
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, c := range batch {
		r, isClosed := cmds[i], closed[c.closed]
		c.err = firstErr(r.held.Err(), r.spent.Err(), isClosed.Err())
		c.held, c.heldUntil = r.held.Err() == nil, int64(r.held.Val())
		c.spentFound = r.spent.Err() == nil
		c.isClosed = isClosed.Val() == 1
		close(c.done)
	}
}

// firstErr is the first error that is not redis.Nil (a missing member or key, which is an answer).
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// Finish records that the pass reserved: it is spent, and its slot is freed at once for the next admission
// (the admission loops running on q here are woken to refill it at once).
func (q *Queue) Finish(ctx context.Context, c Claims) error {
	k := q.keys(c.Screening)
	err := finishScript.Run(ctx, q.rdb, []string{k.active, k.spent, k.freed}, c.Token, c.ExpiresAt.UnixMilli(), c.ID).Err()
	if err != nil {
		return fmt.Errorf("queue: finish %s: %w", c.Screening, err)
	}
	q.slotFreed(c.Screening)
	return nil
}
