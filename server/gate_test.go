// Tests of what the API says of the gate in front of a site: a site-wide room created without seats and on
// sale, a room's gate mode changed with the admission PATCH and refused when unknown, and the room page's
// way to the gate (gate_enter, and the page's form-action).

package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/testenv"
)

// newGateApp is newAdminApp with a gate protecting /checkout with the room shop, on port 8081.
func newGateApp(t *testing.T, env *testenv.Env) *testServer {
	t.Helper()
	return newApp(t, env, func(c *config.Config) {
		c.Admin.Key = adminKey
		c.Gate.Upstream, c.Gate.Addr, c.Gate.Paths, c.Gate.Mode = "http://127.0.0.1:1", "127.0.0.1:8081", []string{"/checkout=shop"}, "auto"
	})
}

func TestASiteWideRoomIsCreatedWithoutSeatsAndIsOnSale(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newGateApp(t, env)
		s := adminScreeningOf(t, "POST shop", a.adminCall(t, http.MethodPost, "/api/admin/screenings",
			createBody(t, "shop", map[string]any{"rows": nil, "seats_per_row": nil, "site_wide": true})), http.StatusCreated)
		if s.SeatsTotal != 0 || s.State != "on_sale" {
			t.Errorf("site-wide room = %d seats, %q, want 0 seats on sale", s.SeatsTotal, s.State)
		}
		wantError(t, "site_wide with rows", a.adminCall(t, http.MethodPost, "/api/admin/screenings",
			createBody(t, "shop2", map[string]any{"site_wide": true})), http.StatusBadRequest, "BAD_SCREENING")
	})
}

func TestTheAPISaysWhichScreeningsAreSiteWideRooms(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newGateApp(t, env)
		a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "shop", map[string]any{"rows": nil, "seats_per_row": nil, "site_wide": true}))
		var list []struct {
			ID       string `json:"id"`
			SiteWide bool   `json:"site_wide"`
		}
		decode(t, "GET /api/screenings", a.get(t, "/api/screenings"), &list)
		got := map[string]bool{}
		for _, s := range list {
			got[s.ID] = s.SiteWide
		}
		if sw, ok := got["shop"]; !ok || !sw {
			t.Errorf("the list's shop: listed %v, site_wide %v, want listed and site-wide", ok, sw)
		}
		if sw, ok := got["s1"]; !ok || sw {
			t.Errorf("the list's s1: listed %v, site_wide %v, want listed with seats", ok, sw)
		}
		var one struct {
			SiteWide *bool `json:"site_wide"`
		}
		decode(t, "GET shop", a.get(t, "/api/screenings/shop"), &one)
		if one.SiteWide == nil || !*one.SiteWide {
			t.Errorf("GET shop: site_wide %v, want true", one.SiteWide)
		}
		decode(t, "GET s1", a.get(t, "/api/screenings/s1"), &one)
		if one.SiteWide == nil || *one.SiteWide {
			t.Errorf("GET s1: site_wide %v, want false, written out", one.SiteWide)
		}
	})
}

// The room page of a room behind the gate names the site its visitors are going to and links back to its
// home page at the gate: gate.site_name, else the gate's host.
func TestAGatedRoomNamesTheSiteBehindTheGate(t *testing.T) {
	type siteOf struct {
		Name string `json:"gate_site_name"`
		URL  string `json:"gate_site_url"`
	}
	for _, name := range []string{"", "The Shop"} {
		t.Run("site_name="+name, func(t *testing.T) {
			testenv.Each(t, func(t *testing.T, env *testenv.Env) {
				a := newApp(t, env, func(c *config.Config) {
					c.Admin.Key = adminKey
					c.Gate.Upstream, c.Gate.Addr, c.Gate.Paths, c.Gate.Mode = "http://127.0.0.1:1", "127.0.0.1:8081", []string{"/checkout=shop"}, "auto"
					c.Gate.SiteName = name
				})
				a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "shop", map[string]any{"rows": nil, "seats_per_row": nil, "site_wide": true}))
				host := strings.TrimPrefix(a.ts.URL, "http://")
				hostname := host[:strings.LastIndexByte(host, ':')]
				want := siteOf{Name: name, URL: "http://" + hostname + ":8081/"}
				if name == "" {
					want.Name = hostname
				}
				var shop, s1 siteOf
				decode(t, "GET shop", a.get(t, "/api/screenings/shop"), &shop)
				if shop != want {
					t.Errorf("shop's site = %+v, want %+v", shop, want)
				}
				decode(t, "GET s1", a.get(t, "/api/screenings/s1"), &s1)
				if s1 != (siteOf{}) {
					t.Errorf("s1, not behind the gate, names a site: %+v", s1)
				}
			})
		})
	}
}

func TestTheGateModeIsChangedLiveAndAnUnknownOneIsRefused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newGateApp(t, env)
		var got struct {
			GateMode string `json:"gate_mode"`
		}
		decode(t, "PATCH queue_all", a.adminCall(t, http.MethodPatch, "/api/admin/screenings/s1/admission", `{"gate_mode":"queue_all"}`), &got)
		if got.GateMode != "queue_all" {
			t.Errorf("PATCH gate_mode queue_all answered %q", got.GateMode)
		}
		var view struct {
			Admission struct {
				GateMode string `json:"gate_mode"`
			} `json:"admission"`
		}
		decode(t, "GET s1", a.adminCall(t, http.MethodGet, "/api/admin/screenings/s1", ""), &view)
		if view.Admission.GateMode != "queue_all" {
			t.Errorf("GET s1 after the PATCH: gate_mode %q, want queue_all", view.Admission.GateMode)
		}
		wantError(t, "PATCH gate_mode open", a.adminCall(t, http.MethodPatch, "/api/admin/screenings/s1/admission", `{"gate_mode":"open"}`),
			http.StatusBadRequest, "BAD_SCREENING")

		// "default" drops the room's own mode: it follows gate.mode (auto) again.
		decode(t, "PATCH default", a.adminCall(t, http.MethodPatch, "/api/admin/screenings/s1/admission", `{"gate_mode":"default"}`), &got)
		decode(t, "GET s1", a.adminCall(t, http.MethodGet, "/api/admin/screenings/s1", ""), &view)
		if got.GateMode != "auto" || view.Admission.GateMode != "auto" {
			t.Errorf("after PATCH gate_mode default: answered %q, GET says %q, want auto (gate.mode) for both", got.GateMode, view.Admission.GateMode)
		}
		if mode, err := a.store.GateRoom(context.Background(), "s1"); err != nil || mode.GateMode != "" {
			t.Errorf("GateRoom(s1) after default = %+v, %v, want no mode of its own", mode, err)
		}
	})
}

func TestTheRoomPageOfAGatedRoomLearnsTheGatesEnterURLFromTheServer(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newGateApp(t, env)
		a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "shop", map[string]any{"rows": nil, "seats_per_row": nil, "site_wide": true}))
		host := strings.TrimPrefix(a.ts.URL, "http://")
		hostname := host[:strings.LastIndexByte(host, ':')]
		var shop, s1 struct {
			GateEnter string `json:"gate_enter"`
		}
		decode(t, "GET shop", a.get(t, "/api/screenings/shop"), &shop)
		if want := "http://" + hostname + ":8081/.waitroom/enter"; shop.GateEnter != want {
			t.Errorf("shop's gate_enter = %q, want %q (the page's host, the gate's port)", shop.GateEnter, want)
		}
		decode(t, "GET s1", a.get(t, "/api/screenings/s1"), &s1)
		if s1.GateEnter != "" {
			t.Errorf("s1, not behind the gate, has gate_enter %q", s1.GateEnter)
		}
		resp := a.get(t, "/s/shop")
		if want := "form-action 'self' http://" + hostname + ":8081\""; !strings.Contains(resp.String(), want) {
			t.Errorf("the room page's policy does not contain %q", want)
		}
		// The gate takes the enter form only with the room's Origin, which a same-origin policy would send as null.
		if got := resp.header.Get("Referrer-Policy"); got != "strict-origin" {
			t.Errorf("the room page's Referrer-Policy = %q, want strict-origin, so that its form carries its Origin", got)
		}
	})
}

// The room page's way to the gate names the host the request reached: a Host line and X-Forwarded-Proto
// are believed from a trusted proxy only, so no client can make the answer (or a cache that keeps it) send
// the page's passes to another host or over plain http.
func TestTheGateEnterURLBelievesHostAndProtoFromTrustedProxiesOnly(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run(map[bool]string{false: "untrusted", true: "trusted"}[trusted], func(t *testing.T) {
			testenv.Each(t, func(t *testing.T, env *testenv.Env) {
				a := newApp(t, env, func(c *config.Config) {
					c.Admin.Key = adminKey
					c.Gate.Upstream, c.Gate.Addr, c.Gate.Paths = "http://127.0.0.1:1", "127.0.0.1:8081", []string{"/checkout=shop"}
					c.HTTP.BehindProxy = trusted
					c.HTTP.TrustedProxies = []string{"127.0.0.1/32"}
				})
				a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "shop", map[string]any{"rows": nil, "seats_per_row": nil, "site_wide": true}))
				forged := func(path string) *http.Response {
					t.Helper()
					req, err := http.NewRequest(http.MethodGet, a.ts.URL+path, nil)
					if err != nil {
						t.Fatal(err)
					}
					req.Host = "evil.example"
					req.Header.Set("X-Forwarded-Proto", "https")
					resp, err := a.client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { resp.Body.Close() })
					return resp
				}
				want := "http://127.0.0.1:8081"
				if trusted {
					want = "https://evil.example:8081"
				}
				var shop struct {
					GateEnter string `json:"gate_enter"`
				}
				if err := json.NewDecoder(forged("/api/screenings/shop").Body).Decode(&shop); err != nil {
					t.Fatal(err)
				}
				if shop.GateEnter != want+"/.waitroom/enter" {
					t.Errorf("gate_enter with a forged Host and proto = %q, want %q", shop.GateEnter, want+"/.waitroom/enter")
				}
				page, _ := io.ReadAll(forged("/s/shop").Body)
				if !strings.Contains(string(page), "form-action 'self' "+want+"\"") {
					t.Errorf("the room page's form-action does not name %s", want)
				}
			})
		})
	}
}
