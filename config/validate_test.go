package config

import (
	"strings"
	"testing"
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
