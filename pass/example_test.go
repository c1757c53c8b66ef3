package pass_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/waitroom/waitroom/pass"
)

// A service checks the pass a visitor brings against the waiting room's published keys. Here the waiting
// room is played by its own signing code (pass.Issuer) and its key set served as the server serves it; in
// production the URL is https://ROOM/.well-known/jwks.json.
func Example() {
	key, _ := pass.GenerateKey("k1")
	room, _ := pass.NewIssuer([]pass.Key{key})
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(room.JWKS())
	}))
	defer jwks.Close()
	visitorsPass, _ := room.Issue("demo", "0123456789abcdef0123456789abcdef", time.Now().Add(5*time.Minute))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // stops the background refresh
	v, err := pass.NewVerifier(ctx, jwks.URL+"/.well-known/jwks.json", pass.WithLeeway(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()

	claims, err := v.Verify(visitorsPass, "demo")
	fmt.Println(claims.Screening, len(claims.Token), err)
	_, err = v.Verify(visitorsPass, "another-show")
	fmt.Println(err != nil)
	// Output:
	// demo 32 <nil>
	// true
}
