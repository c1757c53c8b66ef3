// Package beacontest runs a drand-compatible randomness beacon over HTTP for tests, as httptest runs a
// server: a chain of its own with a BLS12-381 key drawn at start, that serves {URL}/info and
// {URL}/public/{round} (and /public/latest) as drand's v1 relays do, each round signed for real once it is
// due, its randomness SHA-256 of its signature. It can be taken down (Down) to play an unreachable beacon.
package beacontest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudflare/circl/sign/bls"

	"github.com/waitroom/waitroom/fairlog"
)

// Server is a running beacon.
type Server struct {
	// Beacon is its base URL, ending in its chain hash; Chain its chain info.
	Beacon fairlog.Beacon
	Chain  fairlog.ChainInfo

	srv     *httptest.Server
	signG1  *bls.PrivateKey[bls.KeyG2SigG1]
	signG2  *bls.PrivateKey[bls.KeyG1SigG2]
	down    atomic.Bool
	fetches atomic.Int64 // rounds asked for
}

// New starts a beacon of the given scheme (fairlog.SchemeG1Sigs, quicknet's, or fairlog.SchemeG2Sigs)
// whose rounds come every period (whole seconds), its genesis a few periods ago; it stops when tb ends.
func New(tb testing.TB, scheme string, period time.Duration) *Server {
	tb.Helper()
	ikm := make([]byte, 32)
	seed := make([]byte, 32)
	_, _ = rand.Read(ikm)
	_, _ = rand.Read(seed)
	s := &Server{Chain: fairlog.ChainInfo{Period: period, GenesisTime: time.Now().Add(-10 * period).Unix(), GenesisSeed: seed,
		BeaconID: "beacontest", Scheme: scheme}}
	var err error
	switch scheme {
	case fairlog.SchemeG1Sigs:
		if s.signG1, err = bls.KeyGen[bls.KeyG2SigG1](ikm, nil, nil); err == nil {
			s.Chain.PublicKey, err = s.signG1.PublicKey().MarshalBinary()
		}
	case fairlog.SchemeG2Sigs:
		if s.signG2, err = bls.KeyGen[bls.KeyG1SigG2](ikm, nil, nil); err == nil {
			s.Chain.PublicKey, err = s.signG2.PublicKey().MarshalBinary()
		}
	default:
		err = fmt.Errorf("scheme %q", scheme)
	}
	if err != nil {
		tb.Fatalf("beacontest: a key: %v", err)
	}
	s.Chain.Hash = s.Chain.ComputeHash()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	if s.Beacon, err = fairlog.ParseBeacon(s.srv.URL + "/" + s.Chain.Hash); err != nil {
		tb.Fatalf("beacontest: %v", err)
	}
	return s
}

// Down makes the beacon answer 503 to everything (true) or serve again (false).
func (s *Server) Down(down bool) { s.down.Store(down) }

// Fetches is how many rounds were asked for so far (latest included).
func (s *Server) Fetches() int64 { return s.fetches.Load() }

// Round is round r as the beacon serves it once it is due.
func (s *Server) Round(r int64) fairlog.Round {
	var sig []byte
	if s.signG1 != nil {
		sig = bls.Sign(s.signG1, fairlog.RoundMessage(r))
	} else {
		sig = bls.Sign(s.signG2, fairlog.RoundMessage(r))
	}
	return fairlog.Round{Number: r, Randomness: randomness(sig), Signature: hex.EncodeToString(sig)}
}

func randomness(sig []byte) string {
	return fairlog.SeedCommit(sig) // SHA-256, lowercase hex
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+s.Chain.Hash+"/")
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	current := s.Chain.FirstRoundFrom(time.Now())
	if s.Chain.TimeOfRound(current).After(time.Now()) {
		current-- // due later: not published yet
	}
	switch {
	case rest == "info":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.Chain.JSON())
		return
	case rest == "public/latest":
		s.fetches.Add(1)
		s.writeRound(w, current)
		return
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(rest, "public/"), 10, 64)
	if !strings.HasPrefix(rest, "public/") || err != nil || n < 1 {
		http.NotFound(w, r)
		return
	}
	s.fetches.Add(1)
	if n > current {
		http.Error(w, "round not published yet", http.StatusNotFound)
		return
	}
	s.writeRound(w, n)
}

func (s *Server) writeRound(w http.ResponseWriter, n int64) {
	round := s.Round(n)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"round": n, "randomness": round.Randomness, "signature": round.Signature})
}
