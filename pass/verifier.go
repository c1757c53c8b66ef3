// Another service's side of a pass: a Verifier checks one against the waiting room's published key set
// (NewVerifier, its options, Verify), which it keeps fresh in the background.

package pass

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// The defaults of a Verifier's options.
const (
	defaultRefresh       = 5 * time.Minute // the JWK Set's own max-age
	defaultUnknownKID    = 30 * time.Second
	defaultHTTPTimeout   = 5 * time.Second
	defaultLeeway        = 0
	algorithm            = "EdDSA"
	refreshErrorInterval = time.Minute
)

// options are a Verifier's settings.
type options struct {
	client      *http.Client
	refresh     time.Duration
	unknownKID  time.Duration
	httpTimeout time.Duration
	leeway      time.Duration
	now         func() time.Time
	log         *slog.Logger
}

// Option changes a Verifier's settings.
type Option func(*options)

// WithHTTPClient fetches the key set with c (default: http.DefaultClient).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

// WithRefreshInterval fetches the key set every d in the background (default 5 minutes).
func WithRefreshInterval(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// WithUnknownKIDRefresh fetches the key set at most once every d on a pass whose kid is unknown (default 30
// seconds); other such passes meanwhile are refused at once, so forged kids cannot flood the waiting room.
func WithUnknownKIDRefresh(d time.Duration) Option { return func(o *options) { o.unknownKID = d } }

// WithHTTPTimeout bounds one fetch of the key set (default 5 seconds).
func WithHTTPTimeout(d time.Duration) Option { return func(o *options) { o.httpTimeout = d } }

// WithLeeway accepts a pass up to d past its expiry, for clocks that disagree (default none).
func WithLeeway(d time.Duration) Option { return func(o *options) { o.leeway = d } }

// WithClock reads the time from now (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithLogger logs the background refreshes that fail (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Verifier checks passes against a waiting room's key set. It is safe for concurrent use.
type Verifier struct {
	keys   keyfunc.Keyfunc
	parser *jwt.Parser
	now    func() time.Time
	leeway time.Duration
	stop   context.CancelFunc
}

// NewVerifier fetches the key set at jwksURL (e.g. https://room.example/.well-known/jwks.json), and
// refreshes it in the background until ctx ends or Close is called. It fails if the first fetch does.
func NewVerifier(ctx context.Context, jwksURL string, opts ...Option) (*Verifier, error) {
	o := options{client: http.DefaultClient, refresh: defaultRefresh, unknownKID: defaultUnknownKID,
		httpTimeout: defaultHTTPTimeout, leeway: defaultLeeway, now: time.Now, log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.refresh <= 0 || o.unknownKID <= 0 || o.httpTimeout <= 0 || o.leeway < 0 {
		return nil, errors.New("pass: the refresh intervals and the HTTP timeout must be positive, the leeway not negative")
	}
	ctx, stop := context.WithCancel(ctx)
	noFirstError := false
	keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{jwksURL}, keyfunc.Override{
		Client:                    o.client,
		HTTPTimeout:               o.httpTimeout,
		NoErrorReturnFirstHTTPReq: &noFirstError,
		RefreshInterval:           o.refresh,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(o.unknownKID), 1),
		// Bounds the wait for the limiter (a pass with an unknown kid waits for no earlier refetch: it is
		// refused) and the refetch itself.
		RateLimitWaitMax:        o.httpTimeout,
		RefreshErrorHandlerFunc: refreshErrorHandler(o.log),
	})
	if err != nil {
		stop() // ends the refresh the library may have started
		return nil, fmt.Errorf("pass: fetch the key set %s: %w", jwksURL, err)
	}
	return &Verifier{
		keys: keys,
		// iat is not checked against the clock: a room whose clock runs a second ahead would have its fresh
		// passes refused, and the expiry is what bounds a pass.
		parser: jwt.NewParser(jwt.WithValidMethods([]string{algorithm}), jwt.WithExpirationRequired(),
			jwt.WithLeeway(o.leeway), jwt.WithTimeFunc(o.now), jwt.WithStrictDecoding()),
		now:    o.now,
		leeway: o.leeway,
		stop:   stop,
	}, nil
}

// refreshErrorHandler logs a failed fetch of the key set, once a minute at most (the keys already held
// keep serving).
func refreshErrorHandler(log *slog.Logger) func(string) func(context.Context, error) {
	every := rate.NewLimiter(rate.Every(refreshErrorInterval), 1)
	return func(u string) func(context.Context, error) {
		return func(ctx context.Context, err error) {
			if every.Allow() {
				log.WarnContext(ctx, "pass: fetching the key set failed; the keys already held still verify", "url", u, "error", err)
			}
		}
	}
}

// Close stops the background refresh. The Verifier still checks passes with the keys it holds.
func (v *Verifier) Close() { v.stop() }

// Verify checks pass: an EdDSA signature by a key of the set that its kid names, its expiry (with the
// leeway: exp, and adm to the millisecond), and its audience, which must be screening alone. It reads the
// claims in the format the room writes them (claims). It returns the claims, or an error wrapping ErrInvalid.
func (v *Verifier) Verify(pass, screening string) (Claims, error) {
	var p claims
	_, err := v.parser.ParseWithClaims(pass, &p, func(t *jwt.Token) (any, error) {
		if kid, _ := t.Header["kid"].(string); kid == "" {
			return nil, errors.New("no kid in the header")
		}
		return v.keys.Keyfunc(t)
	})
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(p.Audience) != 1 || p.Audience[0] != screening || screening == "" {
		return Claims{}, fmt.Errorf("%w: not a pass for screening %q", ErrInvalid, screening)
	}
	if p.Subject == "" || p.ID == "" || p.AdmissionMs <= 0 || p.IssuedAt == 0 {
		return Claims{}, fmt.Errorf("%w: malformed claims", ErrInvalid)
	}
	// exp is adm up to the whole second; adm is the admission's own end.
	expiresAt := time.UnixMilli(p.AdmissionMs)
	if !v.now().Before(expiresAt.Add(v.leeway)) {
		return Claims{}, fmt.Errorf("%w: the admission ended at %s", ErrInvalid, expiresAt.UTC().Format(time.RFC3339Nano))
	}
	return Claims{
		Token: p.Subject, Screening: screening, ID: p.ID,
		ExpiresAt: expiresAt, IssuedAt: time.Unix(p.IssuedAt, 0), Seats: max(p.Seats, 0),
	}, nil
}
