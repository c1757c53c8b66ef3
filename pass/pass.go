// Package pass owns the admission pass, both sides of it: the waiting room signs and checks its passes with
// an Issuer, and any Go service checks them against the room's published keys (its /.well-known/jwks.json)
// with a Verifier. Import it alone: it needs nothing else of waitroom.
//
// A pass is a JWT whose claims say who was admitted (sub: the queue token), to what (aud: the screening or
// room), until when (adm: the admission's expiry in Unix ms; exp: the same, up to the second), and which
// admission (jti, ID). The room signs it with EdDSA (Ed25519, its header naming the key in kid) or, without
// keys, HS256 with one shared secret that only the room's instances hold. A Verifier accepts EdDSA alone; it
// keeps the key set in memory, refreshes it in the background, and fetches it again at once (rate-limited)
// when a pass names a kid it does not hold, so a key that starts signing is learnt without waiting for the
// next refresh.
//
// A valid pass proves the waiting room admitted its holder; it does not prove the admission is unspent (the
// holder may have reserved or left since): only the waiting room knows that (queue checks and spends the
// slot).
//
// Each file holds one part:
//   - pass.go: what a pass says (Claims), its one claim format, its id (ID), and ErrInvalid
//   - issuer.go: the room's side: signing a pass and checking the room's own (Issuer)
//   - keys.go: the Ed25519 keys that sign passes (Key, ParseKey, GenerateKey) and their JWK Set
//   - verifier.go: another service's side: checking a pass against the room's key set (Verifier)
package pass

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ErrInvalid is every pass that must not be honoured: a bad signature, another algorithm, no kid or an
// unknown one, another screening, expired, or malformed. Verify's errors wrap it.
var ErrInvalid = errors.New("pass: invalid pass")

// Claims is what a verified pass says.
type Claims struct {
	// Token is the holder's queue token (sub): the same through the whole wait and admission.
	Token string
	// Screening is the screening or room the pass admits to (aud).
	Screening string
	// ID names this admission (jti): the same for every copy of one admission's pass.
	ID string
	// ExpiresAt is when the admission lapses (adm, to the millisecond).
	ExpiresAt time.Time
	// IssuedAt is when this copy of the pass was signed (iat). Only a Verifier fills it: the room's own check
	// (Issuer.Verify) has no use for it, and a claim that a slot check builds itself has none.
	IssuedAt time.Time
	// Seats is set on the pass of a waitlist's offer: the most seats it may reserve (0: not an offer, the
	// screening's max_seats bound it).
	Seats int
}

// ID names one admission of token to screening by its exact expiry: a reconnecting user gets the same pass
// id again, and a later admission of the same token (a later tick, so a later expiry) gets another.
func ID(screening, token string, expiresAt time.Time) string {
	sum := sha256.Sum256([]byte(screening + "\x00" + token + "\x00" + strconv.FormatInt(expiresAt.UnixMilli(), 10)))
	return hex.EncodeToString(sum[:16])
}

// tokenPattern is a queue token as the room draws it (queue.NewToken: 128 random bits in lowercase hex);
// the room's own check refuses a pass of any other subject.
var tokenPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// claims is a pass's JWT payload, the one format both sides read: the registered claims a pass uses, under
// their JSON names, and adm. The times are plain integers, as the room writes them, and the audience is a
// list of one: decoding jwt.RegisteredClaims' NumericDate and ClaimStrings runs json.Unmarshal again for
// each, and in a burst of a thousand reservations that made the pass check a third of the server's CPU
// (docs/benchmarks.md).
type claims struct {
	Subject   string   `json:"sub"`
	Audience  []string `json:"aud"`
	ExpiresAt int64    `json:"exp"` // Unix s; 0: absent, which the parsers refuse
	IssuedAt  int64    `json:"iat"` // Unix s; 0: absent
	ID        string   `json:"jti"`
	// AdmissionMs is the admission's expiry in Unix ms, exactly as the active set holds it.
	AdmissionMs int64 `json:"adm"`
	// Seats is a waitlist offer's seats (Claims.Seats); absent on an admission.
	Seats int `json:"seats,omitempty"`
}

// The jwt.Claims methods the parser's validator reads.

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) {
	return numericDate(c.ExpiresAt), nil
}
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)  { return numericDate(c.IssuedAt), nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }
func (c *claims) GetIssuer() (string, error)              { return "", nil }
func (c *claims) GetSubject() (string, error)             { return c.Subject, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)  { return c.Audience, nil }

// numericDate is Unix second s as a JWT time; nil for 0 (absent).
func numericDate(s int64) *jwt.NumericDate {
	if s == 0 {
		return nil
	}
	return jwt.NewNumericDate(time.Unix(s, 0))
}

// ceilSecond rounds t up to the whole second.
func ceilSecond(t time.Time) time.Time {
	if down := t.Truncate(time.Second); !down.Equal(t) {
		return down.Add(time.Second)
	}
	return t
}
