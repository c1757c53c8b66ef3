// Passes: the signed JWT an admission hands out, issued and verified (Passes, Claims), signed with Ed25519
// keys (EdDSA, a kid in the header; keys.go) or one shared HS256 secret. No Redis here: a pass is checked
// against its slot and spent in spend.go.

package queue

import (
	"bytes"
	"crypto/ed25519"
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

// Passes signs and checks admission passes: JWTs with sub = queue token, aud = screening, adm = the
// admission's expiry in Unix ms (it names the admission: no two admissions of a token share it), exp = adm up
// to the whole second (JWT's precision; the slot, checked by CheckPass, is the authority on the last fraction
// of a second), jti = the admission's id, derived from screening, token and adm.
//
// A Passes signs with one algorithm and checks that one alone: EdDSA (NewKeyedPasses: the first key signs
// and names itself in the header's kid, every key verifies, a kid it does not hold is refused), or HS256
// (NewPasses: one shared secret, no kid). A pass of the other family is refused whatever its signature.
type Passes struct {
	// alg is the one algorithm passes are signed and checked with; signKey signs them, and signKID (EdDSA
	// only) names that key in the header.
	alg     jwt.SigningMethod
	signKey any
	signKID string
	// public are the verifying keys by kid (EdDSA only).
	public map[string]ed25519.PublicKey
	// parser checks the algorithm, the signature's spelling and the expiry; Verify checks the audience. One
	// parser serves every pass (it keeps no state of its own between calls).
	parser *jwt.Parser
	key    jwt.Keyfunc
	// jwks is the public keys as a JWK Set, built once.
	jwks []byte
}

// NewPasses returns passes signed with HS256 and secret (every instance behind one Redis must share it).
func NewPasses(secret []byte) *Passes {
	p := &Passes{alg: jwt.SigningMethodHS256, signKey: secret, jwks: []byte(`{"keys":[]}`)}
	p.parser = newParser(p.alg)
	p.key = func(*jwt.Token) (any, error) { return secret, nil }
	return p
}

// NewKeyedPasses returns passes signed with EdDSA by keys[0] and checked with any of keys (every instance
// behind one Redis must hold the same keys). Rotating a key: add the new one last on every instance, then
// put it first, and drop the old one once the passes it signed have expired (active_ttl).
func NewKeyedPasses(keys []PassKey) (*Passes, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("queue: %w: no keys", ErrBadPassKey)
	}
	p := &Passes{alg: jwt.SigningMethodEdDSA, signKey: keys[0].Private, signKID: keys[0].ID,
		public: make(map[string]ed25519.PublicKey, len(keys))}
	for i, k := range keys {
		if !kidPattern.MatchString(k.ID) {
			return nil, fmt.Errorf("queue: %w: key %d: kid %q: want 1 to 64 of A-Z a-z 0-9 . _ -", ErrBadPassKey, i+1, truncate(k.ID, 64))
		}
		if len(k.Private) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("queue: %w: key %q: not an Ed25519 private key", ErrBadPassKey, k.ID)
		}
		if _, dup := p.public[k.ID]; dup {
			return nil, fmt.Errorf("queue: %w: kid %q is listed twice", ErrBadPassKey, k.ID)
		}
		p.public[k.ID] = k.Private.Public().(ed25519.PublicKey)
	}
	jwks, err := jwkSet(keys)
	if err != nil {
		return nil, err
	}
	p.jwks = jwks
	p.parser = newParser(p.alg)
	p.key = p.publicKey
	return p, nil
}

// newParser accepts alg alone, requires an expiry, and reads base64 strictly (a signature must be the one
// canonical base64url spelling of its bytes).
func newParser(alg jwt.SigningMethod) *jwt.Parser {
	return jwt.NewParser(jwt.WithValidMethods([]string{alg.Alg()}), jwt.WithExpirationRequired(), jwt.WithStrictDecoding())
}

// errUnknownKID is a pass whose header names no key this instance holds (or none at all).
var errUnknownKID = errors.New("unknown kid")

// publicKey is the verifying key the pass's kid names.
func (p *Passes) publicKey(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	k, ok := p.public[kid]
	if !ok {
		return nil, errUnknownKID
	}
	return k, nil
}

// Alg is the algorithm passes are signed and checked with: "EdDSA" or "HS256".
func (p *Passes) Alg() string { return p.alg.Alg() }

// SigningKID is the kid of the key that signs (EdDSA), or "" (HS256).
func (p *Passes) SigningKID() string { return p.signKID }

// JWKS is the public keys that check passes, as a JWK Set (RFC 7517): what /.well-known/jwks.json serves.
// With HS256 it is the empty set: a shared secret is not published. Each call returns a copy.
func (p *Passes) JWKS() []byte { return bytes.Clone(p.jwks) }

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
	t := jwt.NewWithClaims(p.alg, claims)
	if p.signKID != "" {
		t.Header["kid"] = p.signKID
	}
	s, err := t.SignedString(p.signKey)
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

// Verify checks pass's signature, algorithm (and with EdDSA, its kid), expiry and audience (it must be for
// screening) and returns its claims, or an error wrapping ErrInvalidPass.
func (p *Passes) Verify(pass, screening string) (Claims, error) {
	var pc passClaims
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
