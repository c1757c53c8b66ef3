// Passes: the signed JWT an admission hands out, issued and verified (Passes, Claims). No Redis here: a pass
// is checked against its slot and spent in spend.go.

package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ErrInvalidPass covers every pass that must not reserve: bad signature, wrong algorithm, wrong
// screening, expired, or malformed.
var ErrInvalidPass = errors.New("invalid pass")

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
