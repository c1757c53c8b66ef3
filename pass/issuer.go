// The room's side of a pass: an Issuer signs the pass of an admission and checks the room's own (Issue,
// Verify), with Ed25519 keys (EdDSA, a kid in the header; keys.go) or one shared HS256 secret, and publishes
// its public keys (JWKS). No Redis here: queue checks a pass against its slot and spends it.

package pass

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer signs and checks admission passes: JWTs with sub = queue token, aud = screening, adm = the
// admission's expiry in Unix ms (it names the admission: no two admissions of a token share it), exp = adm up
// to the whole second (JWT's precision; the slot, checked by CheckPass, is the authority on the last fraction
// of a second), jti = the admission's id (ID), derived from screening, token and adm.
//
// An Issuer signs with one algorithm and checks that one alone: EdDSA (NewIssuer: the first key signs and
// names itself in the header's kid, every key verifies, a kid it does not hold is refused), or HS256
// (NewSecretIssuer: one shared secret, no kid). A pass of the other family is refused whatever its
// signature. It is safe for concurrent use.
type Issuer struct {
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

// NewSecretIssuer returns an Issuer that signs with HS256 and secret (every instance behind one Redis must
// share it).
func NewSecretIssuer(secret []byte) *Issuer {
	p := &Issuer{alg: jwt.SigningMethodHS256, signKey: secret, jwks: []byte(`{"keys":[]}`)}
	p.parser = newParser(p.alg)
	p.key = func(*jwt.Token) (any, error) { return secret, nil }
	return p
}

// NewIssuer returns an Issuer that signs with EdDSA by keys[0] and checks with any of keys (every instance
// behind one Redis must hold the same keys). Rotating a key: add the new one last on every instance, then
// put it first, and drop the old one once the passes it signed have expired (active_ttl).
func NewIssuer(keys []Key) (*Issuer, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("pass: %w: no keys", ErrBadKey)
	}
	p := &Issuer{alg: jwt.SigningMethodEdDSA, signKey: keys[0].Private, signKID: keys[0].ID,
		public: make(map[string]ed25519.PublicKey, len(keys))}
	for i, k := range keys {
		if !kidPattern.MatchString(k.ID) {
			return nil, fmt.Errorf("pass: %w: key %d: kid %q: want 1 to 64 of A-Z a-z 0-9 . _ -", ErrBadKey, i+1, truncate(k.ID, 64))
		}
		if len(k.Private) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("pass: %w: key %q: not an Ed25519 private key", ErrBadKey, k.ID)
		}
		if _, dup := p.public[k.ID]; dup {
			return nil, fmt.Errorf("pass: %w: kid %q is listed twice", ErrBadKey, k.ID)
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
func (p *Issuer) publicKey(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	k, ok := p.public[kid]
	if !ok {
		return nil, errUnknownKID
	}
	return k, nil
}

// Alg is the algorithm passes are signed and checked with: "EdDSA" or "HS256".
func (p *Issuer) Alg() string { return p.alg.Alg() }

// SigningKID is the kid of the key that signs (EdDSA), or "" (HS256).
func (p *Issuer) SigningKID() string { return p.signKID }

// JWKS is the public keys that check passes, as a JWK Set (RFC 7517): what /.well-known/jwks.json serves.
// With HS256 it is the empty set: a shared secret is not published. Each call returns a copy.
func (p *Issuer) JWKS() []byte { return bytes.Clone(p.jwks) }

// Issue signs the pass of token's admission to screening, valid until expiresAt.
func (p *Issuer) Issue(screening, token string, expiresAt time.Time) (string, error) {
	return p.IssueOffer(screening, token, expiresAt, 0)
}

// IssueOffer signs the pass of a waitlist's offer of seats to token (Issue when seats is 0): it may reserve
// that many seats at most.
func (p *Issuer) IssueOffer(screening, token string, expiresAt time.Time, seats int) (string, error) {
	c := &claims{
		Seats:       max(seats, 0),
		Subject:     token,
		Audience:    []string{screening},
		ExpiresAt:   ceilSecond(expiresAt).Unix(),
		IssuedAt:    time.Now().Unix(),
		ID:          ID(screening, token, expiresAt),
		AdmissionMs: expiresAt.UnixMilli(),
	}
	t := jwt.NewWithClaims(p.alg, c)
	if p.signKID != "" {
		t.Header["kid"] = p.signKID
	}
	s, err := t.SignedString(p.signKey)
	if err != nil {
		return "", fmt.Errorf("pass: sign: %w", err)
	}
	return s, nil
}

// Verify checks pass's signature, algorithm (and with EdDSA, its kid), expiry and audience (it must be for
// screening) and returns its claims (all but IssuedAt), or an error wrapping ErrInvalid.
func (p *Issuer) Verify(pass, screening string) (Claims, error) {
	var pc claims
	if _, err := p.parser.ParseWithClaims(pass, &pc, p.key); err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(pc.Audience) != 1 || pc.Audience[0] != screening {
		return Claims{}, fmt.Errorf("%w: not a pass for screening %q", ErrInvalid, screening)
	}
	adm := time.UnixMilli(pc.AdmissionMs)
	if !tokenPattern.MatchString(pc.Subject) || pc.ID != ID(screening, pc.Subject, adm) || pc.ExpiresAt != ceilSecond(adm).Unix() {
		return Claims{}, fmt.Errorf("%w: malformed claims", ErrInvalid)
	}
	if pc.Seats < 0 {
		return Claims{}, fmt.Errorf("%w: malformed claims", ErrInvalid)
	}
	return Claims{ID: pc.ID, Token: pc.Subject, Screening: screening, ExpiresAt: adm, Seats: pc.Seats}, nil
}
