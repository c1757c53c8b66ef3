package config

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestGatePathsLongestPrefixFirst(t *testing.T) {
	c, err := Load("", false, env(map[string]string{
		"WAITROOM_GATE_UPSTREAM": "http://127.0.0.1:3000",
		"WAITROOM_GATE_PATHS":    "/checkout=shop, /checkout/vip=vip,/tickets=demo",
	}))
	if err != nil {
		t.Fatal(err)
	}
	paths, err := c.Gate.GatePaths()
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 || paths[0] != (GatePath{Prefix: "/checkout/vip", Room: "vip"}) {
		t.Errorf("GatePaths() = %+v, want /checkout/vip first of 3", paths)
	}
}

func TestAGatePathsCacheFlagKeepsTheOriginsCaching(t *testing.T) {
	c, err := Load("", false, env(map[string]string{
		"WAITROOM_GATE_UPSTREAM": "http://127.0.0.1:3000",
		"WAITROOM_GATE_PATHS":    "/checkout=shop,/checkout-static=shop; cache",
	}))
	if err != nil {
		t.Fatal(err)
	}
	paths, err := c.Gate.GatePaths()
	if err != nil {
		t.Fatal(err)
	}
	want := []GatePath{{Prefix: "/checkout-static", Room: "shop", Cacheable: true}, {Prefix: "/checkout", Room: "shop"}}
	if len(paths) != 2 || paths[0] != want[0] || paths[1] != want[1] {
		t.Errorf("GatePaths() = %+v, want %+v", paths, want)
	}
}

func TestListenerAndGateSettingsRefusedWithTheirKey(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"WAITROOM_HTTP_BEHIND_PROXY": "true"}, "http.behind_proxy needs http.trusted_proxies"},
		{map[string]string{"WAITROOM_HTTP_TRUSTED_PROXIES": "10.0.0.0/8,not-an-ip"}, `"not-an-ip"`},
		{map[string]string{"WAITROOM_HTTP_READ_TIMEOUT": "0s"}, "http.read_timeout must be positive"},
		{map[string]string{"WAITROOM_HTTP_MAX_HEADER_BYTES": "100"}, "http.max_header_bytes"},
		{map[string]string{"WAITROOM_HTTP_OPS_ADDR": "9180"}, "http.ops_addr"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "ftp://x"}, "gate.upstream"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x"}, "gate.paths is empty"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "checkout=shop"}, "want /prefix=room"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s,/a=t"}, "listed twice"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s;cached"}, "/prefix=room;cache"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s;"}, "/prefix=room;cache"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s;cache;cache"}, "/prefix=room;cache"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a;x=s"}, "want /prefix=room"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s", "WAITROOM_GATE_MODE": "open"}, "gate.mode"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s", "WAITROOM_GATE_PUBLIC_URL": "https://shop.example/x"}, "gate.public_url"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s", "WAITROOM_GATE_SITE_NAME": strings.Repeat("x", 101)}, "gate.site_name"},
		{map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s", "WAITROOM_GATE_SITE_NAME": "The\nShop"}, "gate.site_name"},
	}
	for _, tc := range cases {
		_, err := Load("", false, env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%v) = %v, want an error naming %q", tc.env, err, tc.want)
		}
	}
	c, err := Load("", false, env(map[string]string{"WAITROOM_HTTP_BEHIND_PROXY": "true", "WAITROOM_HTTP_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.7"}))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := ParsePrefix(c.HTTP.TrustedProxies[1]); p.String() != "192.168.1.7/32" {
		t.Errorf("ParsePrefix(%q) = %s, want 192.168.1.7/32", c.HTTP.TrustedProxies[1], p)
	}
}

// TestWebhookSecretIsDecodedAsTheSignerDecodesIt checks webhooks.secret the way the Standard Webhooks
// library reads it when the deliverer starts: "whsec_" and standard, padded base64 of 24 to 64 bytes. A
// secret config accepts must be one the library accepts, and one the library cannot read must be refused
// here, naming the key, rather than stop the server once it runs.
func TestAGateSiteNameIsTakenAsWritten(t *testing.T) {
	name := "The Shop · 가게"
	c, err := Load("", false, env(map[string]string{"WAITROOM_GATE_UPSTREAM": "http://x", "WAITROOM_GATE_PATHS": "/a=s", "WAITROOM_GATE_SITE_NAME": name}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Gate.SiteName != name {
		t.Errorf("gate.site_name = %q, want %q", c.Gate.SiteName, name)
	}
}

func TestWebhookSecretIsDecodedAsTheSignerDecodesIt(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa5}, n)) }
	cases := []struct {
		what, url, secret string
		want              string // "" accepted; else a part of the error
	}{
		{"24 bytes", "https://shop.example/hooks", "whsec_" + b64(24), ""},
		{"32 bytes", "https://shop.example/hooks", "whsec_" + b64(32), ""},
		{"64 bytes", "https://shop.example/hooks", "whsec_" + b64(64), ""},
		{"the docs' example", "https://shop.example/hooks", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ""},
		{"no URL, no secret", "", "", ""},
		{"no secret", "https://shop.example/hooks", "", "webhooks.secret must be set with webhooks.url"},
		{"no prefix", "https://shop.example/hooks", b64(32), `webhooks.secret must start with "whsec_"`},
		{"not base64, long enough", "https://shop.example/hooks", "whsec_this-is-not-base64-at-all!!", "webhooks.secret is not base64"},
		{"URL-safe alphabet", "https://shop.example/hooks", "whsec_" + strings.Repeat("-_", 16), "webhooks.secret is not base64"},
		{"unpadded", "https://shop.example/hooks", "whsec_" + strings.TrimRight(b64(25), "="), "webhooks.secret is not base64"},
		{"16 bytes in 30 characters", "https://shop.example/hooks", "whsec_" + b64(16), "webhooks.secret must decode to 24 to 64 bytes, got 16 bytes"},
		{"23 bytes", "https://shop.example/hooks", "whsec_" + b64(23), "got 23 bytes"},
		{"65 bytes", "https://shop.example/hooks", "whsec_" + b64(65), "got 65 bytes"},
		{"a bad secret without a URL", "", "whsec_this-is-not-base64-at-all!!", "webhooks.secret is not base64"},
	}
	for _, tc := range cases {
		_, err := Load("", false, env(map[string]string{"WAITROOM_WEBHOOKS_URL": tc.url, "WAITROOM_WEBHOOKS_SECRET": tc.secret}))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Load(webhooks.secret %q) = %v, want it accepted", tc.what, tc.secret, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Load(webhooks.secret %q) = %v, want an error with %q", tc.what, tc.secret, err, tc.want)
		}
		if err == nil && tc.secret != "" {
			if _, err := standardwebhooks.NewWebhook(tc.secret); err != nil {
				t.Errorf("%s: config accepts %q, which the webhook library refuses: %v", tc.what, tc.secret, err)
			}
		}
		if err != nil && strings.Contains(err.Error(), tc.secret) && tc.secret != "" {
			t.Errorf("%s: the error %q repeats the secret", tc.what, err)
		}
	}
	// The refusals the library would have met at run time are those it cannot decode.
	for _, s := range []string{"whsec_this-is-not-base64-at-all!!", "whsec_" + strings.Repeat("-_", 16), "whsec_" + strings.TrimRight(b64(25), "=")} {
		if _, err := standardwebhooks.NewWebhook(s); err == nil {
			t.Errorf("the webhook library reads %q: the case does not show a run-time failure", s)
		}
	}
}

func TestAFairnessBeaconIsAURLEndingInItsChainHash(t *testing.T) {
	const hash = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"
	for _, bad := range []string{"https://api.drand.sh", "api.drand.sh/" + hash, "https://api.drand.sh/" + hash + "?x=1"} {
		if _, err := Load("", false, env(map[string]string{"WAITROOM_FAIRNESS_BEACON": bad})); err == nil || !strings.Contains(err.Error(), "fairness.beacon") {
			t.Errorf("Load(fairness.beacon=%q) = %v, want an error naming fairness.beacon", bad, err)
		}
	}
	c, err := Load("", false, env(map[string]string{"WAITROOM_FAIRNESS_BEACON": "https://api.drand.sh/" + hash}))
	if err != nil || c.Fairness.Beacon != "https://api.drand.sh/"+hash {
		t.Errorf("Load(a quicknet beacon) = %q, %v", c.Fairness.Beacon, err)
	}
	if c, err := Load("", false, env(nil)); err != nil || c.Fairness.Beacon != "" {
		t.Errorf("fairness.beacon defaults to %q (%v), want off", c.Fairness.Beacon, err)
	}
}
