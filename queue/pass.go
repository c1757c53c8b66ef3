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
// exp = the admission's expiry, jti = the admission's id.
type Passes struct {
	secret []byte
}

// NewPasses returns passes signed with secret (every instance behind one Redis must share it).
func NewPasses(secret []byte) *Passes {
	return &Passes{secret: secret}
}

// PassID names one admission of token to screening: a reconnecting user gets the same pass id again, and a
// later admission of the same token gets another.
func PassID(screening, token string, expiresAt time.Time) string {
	sum := sha256.Sum256([]byte(screening + "\x00" + token + "\x00" + strconv.FormatInt(expiresAt.UnixMilli(), 10)))
	return hex.EncodeToString(sum[:16])
}

// Issue signs the pass of token's admission to screening, valid until expiresAt.
func (p *Passes) Issue(screening, token string, expiresAt time.Time) (string, error) {
	claims := jwt.RegisteredClaims{
		Subject:   token,
		Audience:  jwt.ClaimStrings{screening},
		ExpiresAt: jwt.NewNumericDate(expiresAt),
		IssuedAt:  jwt.NewNumericDate(time.Now()),
		ID:        PassID(screening, token, expiresAt),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(p.secret)
	if err != nil {
		return "", fmt.Errorf("queue: sign pass: %w", err)
	}
	return s, nil
}

// Verify checks pass's signature, algorithm, expiry and audience (it must be for screening) and returns its
// claims, or an error wrapping ErrInvalidPass.
func (p *Passes) Verify(pass, screening string) (Claims, error) {
	var rc jwt.RegisteredClaims
	parser := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithAudience(screening))
	_, err := parser.ParseWithClaims(pass, &rc, func(*jwt.Token) (any, error) { return p.secret, nil })
	if err != nil {
		return Claims{}, fmt.Errorf("queue: %w: %v", ErrInvalidPass, err)
	}
	exp := rc.ExpiresAt.Time
	if !ValidToken(rc.Subject) || rc.ID != PassID(screening, rc.Subject, exp) {
		return Claims{}, fmt.Errorf("queue: %w: malformed claims", ErrInvalidPass)
	}
	return Claims{ID: rc.ID, Token: rc.Subject, Screening: screening, ExpiresAt: exp}, nil
}

// CheckPass tells whether a verified pass may reserve now: its admission must still hold the slot
// (ErrNotActive otherwise) and it must not have reserved already (ErrPassSpent).
func (q *Queue) CheckPass(ctx context.Context, c Claims) error {
	k := q.keys(c.Screening)
	pipe := q.rdb.Pipeline()
	held := pipe.ZScore(ctx, k.active, c.Token)
	spent := pipe.ZScore(ctx, k.spent, c.ID)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("queue: check pass: %w", err)
	}
	if spent.Err() == nil {
		return fmt.Errorf("queue: check pass: %w", ErrPassSpent)
	}
	if held.Err() != nil || int64(held.Val()) != c.ExpiresAt.UnixMilli() || c.ExpiresAt.Before(q.now()) {
		return fmt.Errorf("queue: check pass: %w", ErrNotActive)
	}
	return nil
}

// Finish records that the pass reserved: it is spent, and its slot is freed at once for the next admission.
func (q *Queue) Finish(ctx context.Context, c Claims) error {
	k := q.keys(c.Screening)
	err := finishScript.Run(ctx, q.rdb, []string{k.active, k.spent}, c.Token, c.ExpiresAt.UnixMilli(), c.ID).Err()
	if err != nil {
		return fmt.Errorf("queue: finish %s: %w", c.Screening, err)
	}
	return nil
}
