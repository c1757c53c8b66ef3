// Tests of the room's Issuer with HS256: a pass round-trips its claims, and every pass that must not
// reserve is refused.

package pass_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// screening is the screening the Issuer's tests sign for.
const screening = "s1"

var secret = []byte("test-secret-0123456789abcdef0123456789")

func TestPassRoundTripsItsClaims(t *testing.T) {
	p := pass.NewSecretIssuer(secret)
	tok := queue.NewToken()
	exp := time.Now().Add(time.Minute).Truncate(time.Second)

	signed, err := p.Issue(screening, tok, exp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Verify(signed, screening)
	if err != nil {
		t.Fatalf("Verify(Issue(...)) = %v, want nil", err)
	}
	want := pass.Claims{ID: pass.ID(screening, tok, exp), Token: tok, Screening: screening, ExpiresAt: exp}
	if c.ID != want.ID || c.Token != want.Token || c.Screening != want.Screening || !c.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("Verify = %+v, want %+v", c, want)
	}
	// Every copy of one admission's pass has one id; another admission of the same token has another.
	if again, _ := p.Issue(screening, tok, exp); mustVerify(t, p, again).ID != c.ID {
		t.Errorf("a second pass of the same admission has another id")
	}
	if later := pass.ID(screening, tok, exp.Add(time.Second)); later == c.ID {
		t.Errorf("ID of a later admission = %s, the same as the earlier one", later)
	}
}

func mustVerify(t *testing.T, p *pass.Issuer, signed string) pass.Claims {
	t.Helper()
	c, err := p.Verify(signed, screening)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return c
}

// handClaims is a pass's payload built by hand: the registered claims and adm, as Issue writes them.
type handClaims struct {
	jwt.RegisteredClaims
	Adm int64 `json:"adm"`
}

// sign builds a JWT by hand, with claims Issue would never write.
func sign(t *testing.T, method jwt.SigningMethod, key any, claims handClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifyRejectsEveryPassThatMustNotReserve(t *testing.T) {
	p := pass.NewSecretIssuer(secret)
	tok, other := queue.NewToken(), queue.NewToken()
	exp := time.Now().Add(time.Minute).Truncate(time.Second)
	good, err := p.Issue(screening, tok, exp)
	if err != nil {
		t.Fatal(err)
	}
	otherPass, _ := p.Issue(screening, other, exp)
	// Each case changes one thing of a pass that verifies (checked first), so it is refused for that alone.
	claims := func(edit func(*handClaims)) handClaims {
		c := handClaims{RegisteredClaims: jwt.RegisteredClaims{
			Subject: tok, Audience: jwt.ClaimStrings{screening}, ExpiresAt: jwt.NewNumericDate(exp),
			IssuedAt: jwt.NewNumericDate(time.Now()), ID: pass.ID(screening, tok, exp),
		}, Adm: exp.UnixMilli()}
		if edit != nil {
			edit(&c)
		}
		return c
	}
	if c, err := p.Verify(sign(t, jwt.SigningMethodHS256, secret, claims(nil)), screening); err != nil || c.Token != tok {
		t.Fatalf("the cases' unchanged pass: Verify = %+v, %v, want it to verify", c, err)
	}
	parts := strings.Split(good, ".")
	otherParts := strings.Split(otherPass, ".")
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}

	cases := []struct {
		name, signed, screening string
	}{
		{"tampered signature", parts[0] + "." + parts[1] + "." + flip(parts[2], len(parts[2])/2), screening},
		{"another pass's claims under this signature", parts[0] + "." + otherParts[1] + "." + parts[2], screening},
		{"wrong screening", good, "s2"},
		{"no screening", good, ""},
		{"expired", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			past := time.Now().Add(-time.Minute).Truncate(time.Second)
			c.ExpiresAt, c.ID, c.Adm = jwt.NewNumericDate(past), pass.ID(screening, tok, past), past.UnixMilli()
		})), screening},
		{"two audiences", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			c.Audience = jwt.ClaimStrings{screening, "s2"}
		})), screening},
		{"exp not adm's second", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			c.ExpiresAt = jwt.NewNumericDate(exp.Add(time.Hour))
		})), screening},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil)), screening},
		{"HS512 with the same secret", sign(t, jwt.SigningMethodHS512, secret, claims(nil)), screening},
		{"HS384 with the same secret", sign(t, jwt.SigningMethodHS384, secret, claims(nil)), screening},
		{"another secret", sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef012345"), claims(nil)), screening},
		{"no expiry", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) { c.ExpiresAt = nil })), screening},
		{"id of another admission", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			c.ID = pass.ID(screening, tok, exp.Add(time.Second))
		})), screening},
		{"subject not a token", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			c.Subject, c.ID = "admin", pass.ID(screening, "admin", exp)
		})), screening},
		{"not a JWT", "not.a.jwt", screening},
		{"empty", "", screening},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Verify(c.signed, c.screening)
			if !errors.Is(err, pass.ErrInvalid) {
				t.Errorf("Verify = %+v, %v, want %v", got, err, pass.ErrInvalid)
			}
			if got != (pass.Claims{}) {
				t.Errorf("Verify returned claims %+v with its error, want none", got)
			}
		})
	}
}
