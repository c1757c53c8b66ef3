// A public randomness beacon (drand's HTTP API) mixed into the pre-queue's seed (docs/admission-log.md,
// "The beacon"): the beacon's URL and chain hash (Beacon, ParseBeacon), its chain info checked against that
// hash (ChainInfo, Beacon.Info), a round fetched and its BLS signature checked against the chain's public key
// (Round, Beacon.Round, ChainInfo.Verify), the round the commitment names (ChainInfo.FirstRoundFrom), and the
// seed mixed with the round's randomness (MixSeed).

package fairlog

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cloudflare/circl/sign/bls"
)

// Beacon names a drand chain served over HTTP: a base URL whose last path segment is the chain's hash
// ("https://api.drand.sh/52db9ba7…"), so the URL alone fixes which chain, and so which public key, signs the
// round a log mixes in, whoever serves it.
type Beacon struct {
	// URL is the base URL, without a trailing slash: {URL}/info and {URL}/public/{round} are drand's routes.
	URL string
	// ChainHash is the URL's last path segment, 64 lowercase hex digits.
	ChainHash string
}

// NoBeacon is what a commitment names when its server has a beacon but could not reach it when it drew the
// seed: the order then follows from the seed alone.
const NoBeacon = "none"

// maxBeaconURL bounds a beacon's URL, so a record naming one stays well under MaxRecord.
const maxBeaconURL = 512

// ParseBeacon reads a beacon's base URL: http(s), a host, no query or fragment, printable ASCII without
// spaces, and the chain's hash as the last path segment. A trailing slash is dropped.
func ParseBeacon(s string) (Beacon, error) {
	s = strings.TrimSuffix(s, "/")
	if len(s) > maxBeaconURL {
		return Beacon{}, fmt.Errorf("fairlog: a beacon URL of %d bytes, more than %d", len(s), maxBeaconURL)
	}
	for _, c := range []byte(s) {
		if c <= 0x20 || c > 0x7e {
			return Beacon{}, fmt.Errorf("fairlog: the beacon URL %q has a space or a byte that is not printable ASCII", s)
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Beacon{}, fmt.Errorf("fairlog: the beacon URL %q: want http(s)://host/…/<chain hash>", s)
	}
	i := strings.LastIndexByte(u.Path, '/')
	hash := u.Path[i+1:]
	if !hexHash(hash) {
		return Beacon{}, fmt.Errorf("fairlog: the beacon URL %q does not end in a chain hash (64 lowercase hex digits)", s)
	}
	return Beacon{URL: s, ChainHash: hash}, nil
}

// The drand schemes whose rounds can be checked alone: unchained, the message signed is SHA-256 of the
// round number (8 bytes, big-endian). A chained scheme signs the previous signature too, which a log does not
// keep, so it is refused.
const (
	// SchemeG1Sigs is quicknet's: signatures on G1 (48 bytes), the public key on G2 (96 bytes), hashed to
	// the curve as RFC 9380 says.
	SchemeG1Sigs = "bls-unchained-g1-rfc9380"
	// SchemeG2Sigs: signatures on G2 (96 bytes), the public key on G1 (48 bytes).
	SchemeG2Sigs = "pedersen-bls-unchained"
)

// ChainInfo is what a drand chain publishes at {URL}/info: enough to know when each round is due and to
// check its signature.
type ChainInfo struct {
	PublicKey   []byte
	Period      time.Duration // whole seconds
	GenesisTime int64         // Unix seconds: round 1 is due then
	GenesisSeed []byte
	BeaconID    string
	Scheme      string
	Hash        string // the chain hash, as Hash computes it
}

// infoJSON reads both forms drand's relays serve: the v1 names (hash, groupHash, schemeID, metadata) and
// the v2 ones (chain_hash, genesis_seed, scheme, beacon_id).
type infoJSON struct {
	PublicKey   string `json:"public_key"`
	Period      int64  `json:"period"`
	GenesisTime int64  `json:"genesis_time"`
	Hash        string `json:"hash"`
	ChainHash   string `json:"chain_hash"`
	GroupHash   string `json:"groupHash"`
	GenesisSeed string `json:"genesis_seed"`
	SchemeID    string `json:"schemeID"`
	Scheme      string `json:"scheme"`
	BeaconID    string `json:"beacon_id"`
	Metadata    struct {
		BeaconID string `json:"beaconID"`
	} `json:"metadata"`
}

// ErrBeacon is every answer of a beacon that is not what its chain hash and public key say it must be.
var ErrBeacon = errors.New("the beacon's answer does not verify")

// ParseChainInfo reads a chain's /info and checks it is the chain whose hash is chainHash: the hash it
// states and the hash of its fields (ChainInfo.ComputeHash) must both be chainHash, and its scheme one this
// package checks.
func ParseChainInfo(b []byte, chainHash string) (ChainInfo, error) {
	var j infoJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return ChainInfo{}, fmt.Errorf("fairlog: %w: chain info: %v", ErrBeacon, err)
	}
	first := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	info := ChainInfo{Period: time.Duration(j.Period) * time.Second, GenesisTime: j.GenesisTime,
		Scheme: first(j.Scheme, j.SchemeID), BeaconID: first(j.BeaconID, j.Metadata.BeaconID), Hash: first(j.ChainHash, j.Hash)}
	var err1, err2 error
	info.PublicKey, err1 = hex.DecodeString(j.PublicKey)
	info.GenesisSeed, err2 = hex.DecodeString(first(j.GenesisSeed, j.GroupHash))
	switch {
	case err1 != nil || err2 != nil:
		return ChainInfo{}, fmt.Errorf("fairlog: %w: chain info: a public key or genesis seed that is not hex", ErrBeacon)
	case j.Period < 1 || j.GenesisTime < 1:
		return ChainInfo{}, fmt.Errorf("fairlog: %w: chain info: period %d s, genesis %d", ErrBeacon, j.Period, j.GenesisTime)
	case info.Hash != chainHash:
		return ChainInfo{}, fmt.Errorf("fairlog: %w: the chain info is of chain %q, the URL names %s", ErrBeacon, info.Hash, chainHash)
	case info.ComputeHash() != chainHash:
		return ChainInfo{}, fmt.Errorf("fairlog: %w: the chain info's fields hash to %s, not to its chain hash %s", ErrBeacon, info.ComputeHash(), chainHash)
	}
	if _, err := info.publicKey(); err != nil {
		return ChainInfo{}, err
	}
	return info, nil
}

// ComputeHash is the chain hash drand derives from the chain's fields (drand's chain.Info.Hash): SHA-256 of
// the period in seconds (4 bytes, big-endian), the genesis time (8 bytes, big-endian), the public key, the
// genesis seed, and the beacon id unless it is the default one.
func (c ChainInfo) ComputeHash() string {
	h := sha256.New()
	_ = binary.Write(h, binary.BigEndian, uint32(c.Period/time.Second))
	_ = binary.Write(h, binary.BigEndian, c.GenesisTime)
	h.Write(c.PublicKey)
	h.Write(c.GenesisSeed)
	if c.BeaconID != "" && c.BeaconID != "default" {
		h.Write([]byte(c.BeaconID))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// JSON is the chain info as drand's v1 relays serve it at /info (ParseChainInfo reads it back).
func (c ChainInfo) JSON() []byte {
	j := infoJSON{PublicKey: hex.EncodeToString(c.PublicKey), Period: int64(c.Period / time.Second), GenesisTime: c.GenesisTime,
		Hash: c.ComputeHash(), GroupHash: hex.EncodeToString(c.GenesisSeed), SchemeID: c.Scheme}
	j.Metadata.BeaconID = c.BeaconID
	b, _ := json.Marshal(j)
	return b
}

// TimeOfRound is when round r is due: round 1 at the genesis, one more every period (drand's
// TimeOfRound). It is published then, or a moment after.
func (c ChainInfo) TimeOfRound(r int64) time.Time {
	return time.Unix(c.GenesisTime, 0).Add(time.Duration(r-1) * c.Period)
}

// FirstRoundFrom is the first round due at or after t: the round a commitment made before t names, whose
// randomness nobody can know before t.
func (c ChainInfo) FirstRoundFrom(t time.Time) int64 {
	since := t.Sub(time.Unix(c.GenesisTime, 0))
	if since <= 0 {
		return 1
	}
	return int64((since+c.Period-1)/c.Period) + 1
}

// publicKey checks the chain's public key is a point of the group its scheme puts keys in.
func (c ChainInfo) publicKey() (any, error) {
	switch c.Scheme {
	case SchemeG1Sigs:
		var pk bls.PublicKey[bls.KeyG2SigG1]
		if err := pk.UnmarshalBinary(c.PublicKey); err != nil || !pk.Validate() {
			return nil, fmt.Errorf("fairlog: %w: a public key that is not a point of G2", ErrBeacon)
		}
		return &pk, nil
	case SchemeG2Sigs:
		var pk bls.PublicKey[bls.KeyG1SigG2]
		if err := pk.UnmarshalBinary(c.PublicKey); err != nil || !pk.Validate() {
			return nil, fmt.Errorf("fairlog: %w: a public key that is not a point of G1", ErrBeacon)
		}
		return &pk, nil
	}
	return nil, fmt.Errorf("fairlog: %w: scheme %q; a log checks only the unchained schemes %s and %s", ErrBeacon, c.Scheme, SchemeG1Sigs, SchemeG2Sigs)
}

// RoundMessage is what the chain signs for round r: SHA-256 of r as 8 bytes, big-endian.
func RoundMessage(r int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(r))
	sum := sha256.Sum256(b[:])
	return sum[:]
}

// Verify checks round r's signature against the chain's public key.
func (c ChainInfo) Verify(r int64, sig []byte) error {
	pk, err := c.publicKey()
	if err != nil {
		return err
	}
	ok := false
	switch pk := pk.(type) {
	case *bls.PublicKey[bls.KeyG2SigG1]:
		ok = bls.Verify(pk, RoundMessage(r), sig)
	case *bls.PublicKey[bls.KeyG1SigG2]:
		ok = bls.Verify(pk, RoundMessage(r), sig)
	}
	if !ok {
		return fmt.Errorf("fairlog: %w: round %d's signature is not the chain's", ErrBeacon, r)
	}
	return nil
}

// Round is one round of a beacon: its number, its randomness and signature (lowercase hex).
type Round struct {
	Number     int64
	Randomness string
	Signature  string
}

// Check checks the round is what the chain published: its randomness is SHA-256 of its signature, and the
// signature is the chain's, on this round's number.
func (r Round) Check(c ChainInfo) error {
	sig, err := hex.DecodeString(r.Signature)
	if err != nil {
		return fmt.Errorf("fairlog: %w: round %d's signature is not hex", ErrBeacon, r.Number)
	}
	if sum := sha256.Sum256(sig); hex.EncodeToString(sum[:]) != r.Randomness {
		return fmt.Errorf("fairlog: %w: round %d's randomness %s is not SHA-256 of its signature (%x)", ErrBeacon, r.Number, r.Randomness, sum)
	}
	return c.Verify(r.Number, sig)
}

// Info fetches the beacon's chain info and checks it against the chain hash in its URL.
func (b Beacon) Info(ctx context.Context, client *http.Client) (ChainInfo, error) {
	body, err := fetcher{ctx: ctx, client: client}.get(b.URL+"/info", maxSmallBody)
	if err != nil {
		return ChainInfo{}, err
	}
	return ParseChainInfo(body, b.ChainHash)
}

// Round fetches round r and checks it against the chain (Round.Check).
func (b Beacon) Round(ctx context.Context, client *http.Client, c ChainInfo, r int64) (Round, error) {
	u := b.URL + "/public/" + strconv.FormatInt(r, 10)
	body, err := fetcher{ctx: ctx, client: client}.get(u, maxSmallBody)
	if err != nil {
		return Round{}, err // not published yet (drand answers 404 or 425 until it is), or no answer
	}
	var j struct {
		Round      int64  `json:"round"`
		Randomness string `json:"randomness"`
		Signature  string `json:"signature"`
	}
	if err := json.Unmarshal(body, &j); err != nil {
		return Round{}, fmt.Errorf("fairlog: %w: GET %s: %v", ErrBeacon, u, err)
	}
	if j.Round != r {
		return Round{}, fmt.Errorf("fairlog: %w: GET %s answered round %d", ErrBeacon, u, j.Round)
	}
	got := Round{Number: r, Randomness: strings.ToLower(j.Randomness), Signature: strings.ToLower(j.Signature)}
	if err := got.Check(c); err != nil {
		return Round{}, err
	}
	return got, nil
}

// MixSeed is the seed the opening's shuffle keys come from when a beacon's round is mixed in:
// SHA-256(seed ‖ the round's randomness, 32 bytes).
func MixSeed(seed []byte, randomness string) []byte {
	r, _ := hex.DecodeString(randomness)
	h := sha256.New()
	h.Write(seed)
	h.Write(r)
	return h.Sum(nil)
}

// knownChains names the public chains a verifier recognises by hash; any other chain is reported as one to
// check by hand (an operator could name a chain of its own, whose randomness it knows in advance).
var knownChains = map[string]string{
	"52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971": "the League of Entropy's drand quicknet",
	"8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce": "the League of Entropy's drand mainnet (chained: not checkable here)",
}

// beaconsOf fetches the chain info of every beacon the records' commitments name (normally one), for
// CheckWith.
func beaconsOf(f fetcher, records []Record) (map[string]ChainInfo, error) {
	out := map[string]ChainInfo{}
	for _, r := range records {
		if r.Kind != KindCommit || r.Beacon == "" || r.Beacon == NoBeacon {
			continue
		}
		if _, ok := out[r.Beacon]; ok {
			continue
		}
		if len(out) == maxBeacons {
			return nil, fmt.Errorf("fairlog: the log names more than %d beacons", maxBeacons)
		}
		b, err := ParseBeacon(r.Beacon)
		if err != nil {
			return nil, err
		}
		info, err := b.Info(f.ctx, f.client)
		if err != nil {
			return nil, fmt.Errorf("fairlog: the beacon %s, which the log names: %w", r.Beacon, err)
		}
		out[r.Beacon] = info
	}
	return out, nil
}

// maxBeacons bounds the beacons a log may make a verifier fetch (one per commitment; a reset sale commits
// again).
const maxBeacons = 16

// checkWithBeacons is Check, with the chain info of the beacons the log names fetched first.
func checkWithBeacons(f fetcher, screening string, records []Record) (*Report, error) {
	chains, err := beaconsOf(f, records)
	if err != nil {
		return nil, err
	}
	return CheckWith(screening, records, chains), nil
}
