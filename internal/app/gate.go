// The gate in front of an existing site (gate.upstream set): built with the instance (newGate), served on a
// listener of its own, gate.addr (gateListener; main.go serves and drains it with the others), so the waiting room's pages, API and sockets on http.addr
// never meet the origin's paths.

package app

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/server"
)

// newGate builds the gate for cfg.Gate on the instance's queue, passes, store and entry rules (a.Entry, the
// sockets' cache), and what the API says of it; nil when gate.upstream is empty. registrations is the instance's pace of new places per address,
// which the sockets share.
func (a *App) newGate(cfg config.Config, registrations *limit.Rate) (*gate.Gate, server.GateLinks, error) {
	if cfg.Gate.Upstream == "" {
		return nil, server.GateLinks{}, nil
	}
	upstream, err := url.Parse(cfg.Gate.Upstream)
	if err != nil {
		return nil, server.GateLinks{}, fmt.Errorf("app: gate.upstream: %w", err)
	}
	paths, err := cfg.Gate.GatePaths()
	if err != nil {
		return nil, server.GateLinks{}, fmt.Errorf("app: %w", err)
	}
	links := server.GateLinks{PublicURL: cfg.Gate.PublicURL, Port: portOf(cfg.Gate.Addr), Mode: cfg.Gate.Mode, SiteName: cfg.Gate.SiteName}
	gp := make([]gate.Path, len(paths))
	for i, p := range paths {
		gp[i] = gate.Path{Prefix: p.Prefix, Room: p.Room, Cacheable: p.Cacheable}
		links.Screenings = append(links.Screenings, p.Room)
	}
	settings := gate.Settings{
		Upstream: upstream, Paths: gp, RoomURL: cfg.Gate.RoomURL, PublicURL: cfg.Gate.PublicURL, RoomPort: portOf(cfg.HTTP.Addr), Mode: cfg.Gate.Mode,
		Defaults: AdmissionDefaults(cfg), Entry: a.Entry, ReadTimeout: cfg.HTTP.ReadTimeout, ClientAddress: limit.ClientAddress(nil),
		Direct:        limit.NewRate(cfg.Limits.RegistrationsPerSecond, cfg.Limits.RegistrationBurst),
		Registrations: registrations, InfiniteQueue: cfg.Bots.InfiniteQueue, HoldFor: cfg.Bots.Hold,
	}
	if cfg.HTTP.BehindProxy {
		settings.TrustedProxies = trustedProxies(cfg.HTTP)
		settings.ClientAddress = limit.ClientAddress(settings.TrustedProxies)
	}
	g, err := gate.New(settings, a.Queue, a.Passes, a.Store, a.Registry, a.Log)
	if err != nil {
		return nil, server.GateLinks{}, fmt.Errorf("app: %w", err)
	}
	return g, links, nil
}

// portOf is the port of addr ("" when it has none).
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// gateListener opens gate.addr for the gate, served and drained with the instance's other listeners
// (serve). main is the waiting room's own listener: the gate's redirects name its port, and the room page's
// enter URL the gate's, as they listen (either may be :0).
func (a *App) gateListener(main net.Listener) (listener, error) {
	ln, err := net.Listen("tcp", a.Config.Gate.Addr)
	if err != nil {
		return listener{}, fmt.Errorf("app: listen gate.addr %s: %w", a.Config.Gate.Addr, err)
	}
	a.Gate.SetRoomPort(strconv.Itoa(main.Addr().(*net.TCPAddr).Port))
	a.Server.SetGatePort(strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	a.Log.Info("gate serving", "addr", ln.Addr().String(), "upstream", a.Config.Gate.Upstream)
	return listener{name: "gate", ln: ln, handler: a.Gate, proxied: true}, nil
}
