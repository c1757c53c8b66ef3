// The passes' public keys at /.well-known/jwks.json, for any service that checks a pass without holding a
// secret (docs/passes.md).

package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// KeySet publishes the keys that check passes: pass.Issuer.
type KeySet interface {
	// JWKS is the public keys as a JWK Set (RFC 7517); the empty set when passes are HS256.
	JWKS() []byte
}

// jwksMaxAge is how long a verifier may keep the set: a key added for a rotation must be published this long
// before it signs (docs/operations.md).
const jwksMaxAge = "300"

// emptyJWKS is the set served without a KeySet.
var emptyJWKS = []byte(`{"keys":[]}`)

// jwks serves the JWK Set. It is public by design (public keys only), so any origin may read it.
func (s *Server) jwks(c echo.Context) error {
	set := emptyJWKS
	if s.PassKeys != nil {
		set = s.PassKeys.JWKS()
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age="+jwksMaxAge)
	h.Set("Access-Control-Allow-Origin", "*")
	return c.Blob(http.StatusOK, "application/jwk-set+json", set)
}
