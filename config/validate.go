// The checks of the listeners' settings (http.*), the gate's (gate.*) and the webhooks' (webhooks.*), apart
// from Validate's list.

package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// validate names what cannot work in the listener's settings.
func (h HTTP) validate() []error {
	var errs []error
	for key, d := range map[string]time.Duration{"http.read_timeout": h.ReadTimeout, "http.write_timeout": h.WriteTimeout, "http.idle_timeout": h.IdleTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", key, d))
		}
	}
	if h.MaxHeaderBytes < 4<<10 {
		errs = append(errs, fmt.Errorf("http.max_header_bytes must be at least 4096, got %d", h.MaxHeaderBytes))
	}
	for _, p := range h.TrustedProxies {
		if _, err := ParsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("http.trusted_proxies: %w", err))
		}
	}
	if h.BehindProxy && len(h.TrustedProxies) == 0 {
		errs = append(errs, fmt.Errorf("http.behind_proxy needs http.trusted_proxies: the addresses of the proxies whose X-Forwarded-For is believed"))
	}
	if h.OpsAddr != "" {
		if _, _, err := net.SplitHostPort(h.OpsAddr); err != nil {
			errs = append(errs, fmt.Errorf("http.ops_addr %q: want host:port: %v", h.OpsAddr, err))
		}
	}
	return errs
}

// ParsePrefix reads a trusted proxy: a CIDR range, or one address (a range of one).
func ParsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q: want a CIDR range or an address", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q: want a CIDR range or an address", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// GatePath is one protected prefix of gate.paths and the room its visitors wait in.
type GatePath struct {
	Prefix string
	Room   string
	// Cacheable ("/prefix=room;cache") keeps the origin's caching headers on its answers under the prefix;
	// without it the gate marks every answer there private, no-store, Vary: Cookie.
	Cacheable bool
}

// GatePaths reads gate.paths, longest prefix first (so /checkout/vip is matched before /checkout). Each is
// "/prefix=room", or "/prefix=room;cache" for a prefix whose answers caches may keep.
func (g Gate) GatePaths() ([]GatePath, error) {
	out := make([]GatePath, 0, len(g.Paths))
	for _, p := range g.Paths {
		prefix, room, ok := strings.Cut(p, "=")
		room, flag, flagged := strings.Cut(room, ";")
		prefix, room, flag = strings.TrimSpace(prefix), strings.TrimSpace(room), strings.TrimSpace(flag)
		if !ok || !strings.HasPrefix(prefix, "/") || room == "" || strings.ContainsAny(room, "/?#=, ") ||
			strings.ContainsAny(prefix, ";\\") || (flagged && flag != "cache") {
			return nil, fmt.Errorf("gate.paths: %q: want /prefix=room, or /prefix=room;cache for answers caches may keep", p)
		}
		if slices.ContainsFunc(out, func(o GatePath) bool { return o.Prefix == prefix }) {
			return nil, fmt.Errorf("gate.paths: %q is listed twice", prefix)
		}
		out = append(out, GatePath{Prefix: prefix, Room: room, Cacheable: flagged})
	}
	slices.SortStableFunc(out, func(a, b GatePath) int { return len(b.Prefix) - len(a.Prefix) })
	return out, nil
}

// validate names what cannot work in the gate's settings (nothing is checked while it is off).
func (g Gate) validate() []error {
	if g.Upstream == "" {
		return nil
	}
	var errs []error
	if u, err := url.Parse(g.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("gate.upstream %q: want an http(s) URL", g.Upstream))
	}
	if _, _, err := net.SplitHostPort(g.Addr); err != nil {
		errs = append(errs, fmt.Errorf("gate.addr %q: want host:port: %v", g.Addr, err))
	}
	if paths, err := g.GatePaths(); err != nil {
		errs = append(errs, err)
	} else if len(paths) == 0 {
		errs = append(errs, fmt.Errorf("gate.paths is empty: name at least one protected prefix (/checkout=shop)"))
	}
	if g.RoomURL != "" {
		if u, err := url.Parse(g.RoomURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("gate.room_url %q: want an http(s) URL", g.RoomURL))
		}
	}
	if g.PublicURL != "" {
		if u, err := url.Parse(g.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("gate.public_url %q: want an http(s) URL with no path", g.PublicURL))
		}
	}
	if len(g.SiteName) > MaxSiteNameBytes || !utf8.ValidString(g.SiteName) || strings.ContainsFunc(g.SiteName, unicode.IsControl) {
		errs = append(errs, fmt.Errorf("gate.site_name %q: want a name of at most %d bytes of text, no control characters", g.SiteName, MaxSiteNameBytes))
	}
	if !slices.Contains(GateModes, g.Mode) {
		errs = append(errs, fmt.Errorf("gate.mode %q: want auto, queue_all or passthrough", g.Mode))
	}
	return errs
}

// Webhook secrets: the Standard Webhooks form, "whsec_" and the base64 of the HMAC key.
const (
	webhookSecretPrefix = "whsec_"
	minWebhookKeyBytes  = 24
	maxWebhookKeyBytes  = 64
)

// validate names what cannot work in the webhooks' settings. The secret is decoded as the Standard Webhooks
// library decodes it when the deliverer starts (standard, padded base64 after "whsec_"), so a secret it
// could not read is refused here rather than stopping the server once it runs; a secret set without a URL
// is checked too, as it is meant for a URL to come.
func (w Webhooks) validate() []error {
	var errs []error
	if w.URL != "" && !(strings.HasPrefix(w.URL, "https://") || strings.HasPrefix(w.URL, "http://")) {
		errs = append(errs, fmt.Errorf("webhooks.url %q: want an http(s) URL", w.URL))
	}
	if w.Secret == "" {
		if w.URL != "" {
			errs = append(errs, errors.New(`webhooks.secret must be set with webhooks.url: "whsec_" and the base64 of 24 to 64 random bytes`))
		}
		return errs
	}
	encoded, ok := strings.CutPrefix(w.Secret, webhookSecretPrefix)
	if !ok {
		return append(errs, errors.New(`webhooks.secret must start with "whsec_", then the base64 of 24 to 64 random bytes`))
	}
	// The decoder's error gives a position, never the secret's text.
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return append(errs, fmt.Errorf(`webhooks.secret is not base64 after "whsec_" (standard alphabet, padded): %v`, err))
	}
	if n := len(key); n < minWebhookKeyBytes || n > maxWebhookKeyBytes {
		errs = append(errs, fmt.Errorf("webhooks.secret must decode to %d to %d bytes, got %d bytes", minWebhookKeyBytes, maxWebhookKeyBytes, n))
	}
	return errs
}
