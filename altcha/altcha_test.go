// altcha_test.go checks the package against altcha-lib's own vectors and the other way round.
package altcha

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "write testdata/go-challenge.json for vectors.mjs to solve")

// farFuture is the expiry of the reference vectors: 2100-01-01T00:00:00Z.
var farFuture = time.Unix(4102444800, 0)

// now is a moment before every vector's expiry.
var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

type vector struct {
	Name      string          `json:"name"`
	Counter   *uint32         `json:"counter"`
	Challenge json.RawMessage `json:"challenge"`
	Solution  json.RawMessage `json:"solution"`
	Payload   *string         `json:"payload"`
	Canonical string          `json:"canonical"`
}

type vectorFile struct {
	Secrets struct {
		Signature    string `json:"signature"`
		KeySignature string `json:"keySignature"`
	} `json:"secrets"`
	Vectors   []vector `json:"vectors"`
	Canonical []struct {
		Input     string `json:"input"`
		Canonical string `json:"canonical"`
	} `json:"canonical"`
}

func readVectors(t testing.TB) (vectorFile, Secrets) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f, Secrets{Signature: []byte(f.Secrets.Signature), KeySignature: []byte(f.Secrets.KeySignature)}
}

// encodeJSON makes a payload of a JSON text the way Encode does: non-ASCII escaped, standard base64.
func encodeJSON(text []byte) string {
	return base64.StdEncoding.EncodeToString(asciiJSON(text))
}

// payloadOf joins a vector's challenge and solution as the widget would, from their JSON as altcha-lib
// wrote them.
func (v vector) payloadOf() string {
	return encodeJSON([]byte(`{"challenge":` + string(v.Challenge) + `,"solution":` + string(v.Solution) + `}`))
}

// payloads are every encoding of v to check: the one built here, and the widget's btoa when it has one.
func (v vector) payloads() []string {
	out := []string{v.payloadOf()}
	if v.Payload != nil {
		out = append(out, *v.Payload)
	}
	return out
}

func TestEveryReferenceVectorVerifies(t *testing.T) {
	f, secrets := readVectors(t)
	for _, v := range f.Vectors {
		for _, encoded := range v.payloads() {
			p, err := DecodePayload(encoded)
			if err != nil {
				t.Fatalf("%s: DecodePayload: %v", v.Name, err)
			}
			if got := string(p.signed); got != v.Canonical {
				t.Errorf("%s: canonical JSON\n got %s\nwant %s", v.Name, got, v.Canonical)
			}
			if err := Verify(p, secrets, now); err != nil {
				t.Errorf("%s: Verify with the key signature = %v, want nil", v.Name, err)
			}
			if err := Verify(p, Secrets{Signature: secrets.Signature}, now); err != nil {
				t.Errorf("%s: Verify by deriving again = %v, want nil", v.Name, err)
			}
			again, err := DecodePayload(p.Encode())
			if err != nil || Verify(again, secrets, now) != nil {
				t.Errorf("%s: Encode does not give back a payload that verifies (%v)", v.Name, err)
			}
		}
	}
}

func TestCreateMatchesReference(t *testing.T) {
	f, secrets := readVectors(t)
	made := 0
	for _, v := range f.Vectors {
		var ref Challenge
		if err := json.Unmarshal(v.Challenge, &ref); err != nil || v.Counter == nil ||
			ref.Parameters.Algorithm != AlgorithmPBKDF2SHA256 {
			continue // not a challenge Create can make: another algorithm, or data that are not strings
		}
		nonce, _ := hex.DecodeString(ref.Parameters.Nonce)
		salt, _ := hex.DecodeString(ref.Parameters.Salt)
		o := Options{Cost: ref.Parameters.Cost, Counter: *v.Counter, Data: ref.Parameters.Data}
		if ref.Parameters.ExpiresAt != 0 {
			o.ExpiresAt = time.Unix(ref.Parameters.ExpiresAt, 0)
		}
		got, err := create(o, secrets, nonce, salt)
		if err != nil {
			t.Fatalf("%s: create: %v", v.Name, err)
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(ref)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: create\n got %s\nwant %s", v.Name, gotJSON, wantJSON)
		}
		made++
	}
	if made < 3 {
		t.Fatalf("only %d vectors rebuilt, want the deterministic PBKDF2/SHA-256 ones", made)
	}
}

// tamper edits a vector's payload as JSON and encodes it again.
func tamper(t *testing.T, v vector, edit func(payload map[string]any) bool) (string, bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(`{"challenge":`+string(v.Challenge)+`,"solution":`+string(v.Solution)+`}`), &m); err != nil {
		t.Fatal(err)
	}
	if !edit(m) {
		return "", false
	}
	text, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return encodeJSON(text), true
}

func params(m map[string]any) map[string]any {
	return m["challenge"].(map[string]any)["parameters"].(map[string]any)
}

func flipHex(s string) string {
	last := s[len(s)-1]
	if last == '0' {
		return s[:len(s)-1] + "1"
	}
	return s[:len(s)-1] + "0"
}

func TestTamperedVectorRefused(t *testing.T) {
	f, secrets := readVectors(t)
	keyOnly := Secrets{Signature: secrets.Signature}
	cases := []struct {
		name    string
		secrets Secrets
		want    error
		edit    func(m map[string]any) bool
	}{
		{"signature changed", secrets, ErrSignature, func(m map[string]any) bool {
			c := m["challenge"].(map[string]any)
			c["signature"] = flipHex(c["signature"].(string))
			return true
		}},
		{"signature upper-cased", secrets, ErrSignature, func(m map[string]any) bool {
			c := m["challenge"].(map[string]any)
			c["signature"] = strings.ToUpper(c["signature"].(string))
			return true
		}},
		{"signature removed", secrets, ErrSignature, func(m map[string]any) bool {
			delete(m["challenge"].(map[string]any), "signature")
			return true
		}},
		{"cost lowered", secrets, ErrSignature, func(m map[string]any) bool {
			params(m)["cost"] = params(m)["cost"].(float64) - 1
			return true
		}},
		{"keyPrefix changed", keyOnly, ErrSignature, func(m map[string]any) bool {
			params(m)["keyPrefix"] = flipHex(params(m)["keyPrefix"].(string))
			return true
		}},
		{"screening changed", secrets, ErrSignature, func(m map[string]any) bool {
			d, ok := params(m)["data"].(map[string]any)
			if ok {
				d["screening"] = "another"
			}
			return ok
		}},
		{"data removed", secrets, ErrSignature, func(m map[string]any) bool {
			_, ok := params(m)["data"]
			delete(params(m), "data")
			return ok
		}},
		{"expiry extended", secrets, ErrSignature, func(m map[string]any) bool {
			_, ok := params(m)["expiresAt"]
			params(m)["expiresAt"] = farFuture.Unix() + 1
			return ok
		}},
		{"field added", secrets, ErrSignature, func(m map[string]any) bool {
			params(m)["memoryCost"] = 1
			return true
		}},
		{"derived key changed", secrets, ErrSolution, func(m map[string]any) bool {
			s := m["solution"].(map[string]any)
			s["derivedKey"] = flipHex(s["derivedKey"].(string))
			return true
		}},
		{"derived key changed, derived again", keyOnly, ErrSolution, func(m map[string]any) bool {
			s := m["solution"].(map[string]any)
			s["derivedKey"] = flipHex(s["derivedKey"].(string))
			return true
		}},
		{"derived key upper-cased", secrets, ErrSolution, func(m map[string]any) bool {
			s := m["solution"].(map[string]any)
			s["derivedKey"] = strings.ToUpper(s["derivedKey"].(string))
			return strings.ContainsAny(s["derivedKey"].(string), "ABCDEF")
		}},
		{"counter changed, derived again", keyOnly, ErrSolution, func(m map[string]any) bool {
			s := m["solution"].(map[string]any)
			s["counter"] = s["counter"].(float64) + 1
			return true
		}},
		{"counter not an integer", secrets, ErrSolution, func(m map[string]any) bool {
			m["solution"].(map[string]any)["counter"] = 1.5
			return true
		}},
		{"counter beyond uint32", secrets, ErrSolution, func(m map[string]any) bool {
			m["solution"].(map[string]any)["counter"] = 1 << 32
			return true
		}},
		{"solution removed", secrets, ErrSolution, func(m map[string]any) bool {
			delete(m, "solution")
			return true
		}},
	}
	for _, c := range cases {
		tried := 0
		for _, v := range f.Vectors {
			encoded, ok := tamper(t, v, c.edit)
			if !ok {
				continue
			}
			tried++
			p, err := DecodePayload(encoded)
			if err != nil {
				t.Fatalf("%s, %s: DecodePayload: %v", c.name, v.Name, err)
			}
			if err := Verify(p, c.secrets, now); !errors.Is(err, c.want) {
				t.Errorf("%s, %s: Verify = %v, want %v", c.name, v.Name, err, c.want)
			}
		}
		if tried == 0 {
			t.Errorf("%s: no vector to tamper with", c.name)
		}
	}
}

func TestChangedParametersAfterDecodingRefused(t *testing.T) {
	f, secrets := readVectors(t)
	p, err := DecodePayload(f.Vectors[0].payloadOf())
	if err != nil {
		t.Fatal(err)
	}
	p.Challenge.Parameters.Data = map[string]string{"screening": "another"}
	if err := Verify(p, secrets, now); !errors.Is(err, ErrSignature) {
		t.Errorf("Verify after changing data = %v, want %v", err, ErrSignature)
	}
}

func TestExpiredChallengeRefused(t *testing.T) {
	f, secrets := readVectors(t)
	for _, v := range f.Vectors {
		p, err := DecodePayload(v.payloadOf())
		if err != nil {
			t.Fatal(err)
		}
		if p.Challenge.Parameters.ExpiresAt == 0 {
			continue
		}
		if err := Verify(p, secrets, farFuture.Add(time.Millisecond)); !errors.Is(err, ErrExpired) {
			t.Errorf("%s: Verify just after expiry = %v, want %v", v.Name, err, ErrExpired)
		}
		if err := Verify(p, secrets, farFuture); err != nil {
			t.Errorf("%s: Verify at the expiry's second = %v, want nil", v.Name, err)
		}
	}
	o := Options{Cost: 10, Counter: 3, ExpiresAt: now.Add(5 * time.Minute)}
	c, err := Create(o, secrets)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := Solve(context.Background(), c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(Payload{Challenge: c, Solution: sol}, secrets, now.Add(5*time.Minute+time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("Verify after expiry = %v, want %v", err, ErrExpired)
	}
}

// awkwardData are data values JSON writers disagree on: HTML characters, line separators, non-ASCII.
var awkwardData = map[string]string{
	"screening": `q"b\s<x>&y` + "\u2028z\u2029é中🎬\n\t\x01",
	"é":         "e",
	"🎬":         "clapper",
	"10":        "ten",
	"2":         "two",
}

func TestGoChallengeSolvedByGoVerifies(t *testing.T) {
	secrets := Secrets{Signature: []byte("sig"), KeySignature: []byte("key")}
	for _, data := range []map[string]string{{"screening": "scr-1"}, awkwardData, nil} {
		c, err := Create(Options{Cost: 100, Counter: 21, ExpiresAt: farFuture, Data: data}, secrets)
		if err != nil {
			t.Fatal(err)
		}
		sol, err := Solve(context.Background(), c, 3)
		if err != nil {
			t.Fatal(err)
		}
		if sol.Counter != 21 {
			t.Errorf("Solve found counter %d, want the secret 21", sol.Counter)
		}
		// The challenge travels as JSON (Go escapes <, >, & and U+2028), the payload comes back from a client.
		challengeJSON, _ := json.Marshal(c)
		solutionJSON, _ := json.Marshal(sol)
		p, err := DecodePayload(encodeJSON([]byte(`{"challenge":` + string(challengeJSON) + `,"solution":` + string(solutionJSON) + `}`)))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []Secrets{secrets, {Signature: secrets.Signature}} {
			if err := Verify(p, s, now); err != nil {
				t.Errorf("data %v: Verify = %v, want nil", data, err)
			}
		}
		if err := Verify(Payload{Challenge: c, Solution: sol}, secrets, now); err != nil {
			t.Errorf("data %v: Verify of the values = %v, want nil", data, err)
		}
	}
}

func TestSolveEndsWithItsContext(t *testing.T) {
	secrets := Secrets{Signature: []byte("sig")}
	c, err := Create(Options{Cost: 1000, Counter: 1 << 31}, secrets)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := Solve(ctx, c, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Solve = %v, want %v", err, context.DeadlineExceeded)
	}
}

func TestCanonicalJSONMatchesJSONStringify(t *testing.T) {
	f, _ := readVectors(t)
	for _, c := range f.Canonical {
		v, err := parseJSON([]byte(c.Input))
		if err != nil {
			t.Fatalf("parseJSON(%s): %v", c.Input, err)
		}
		if got := string(canonicalJSON(v)); got != c.Canonical {
			t.Errorf("canonicalJSON(%s)\n got %s\nwant %s", c.Input, got, c.Canonical)
		}
	}
}

func TestDecodePayloadRefusesMalformed(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{
		"", "not base64!", b64("not json"), b64("[1]"), b64(`{"solution":{}}`), b64(`{"challenge":{"parameters":"x"}}`),
		b64(`{"challenge":{"parameters":{"cost":"1000"}}}`), b64(`{"challenge":{"parameters":{"cost":1.5}}}`),
		b64(`{"challenge":{"parameters":{},"signature":7}}`), b64(`{"challenge":{"parameters":{}}} x`),
		b64(`{"challenge":{"parameters":{"data":[]}}}`), strings.Repeat("A", MaxPayloadBytes+4),
	} {
		if _, err := DecodePayload(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodePayload(%.40q) = %v, want %v", s, err, ErrMalformed)
		}
	}
}

func TestDecodePayloadAcceptsURLSafeAndUnpadded(t *testing.T) {
	f, secrets := readVectors(t)
	for _, v := range f.Vectors {
		std := v.payloadOf()
		raw, _ := base64.StdEncoding.DecodeString(std)
		for _, s := range []string{base64.URLEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
			base64.RawStdEncoding.EncodeToString(raw)} {
			p, err := DecodePayload(s)
			if err != nil {
				t.Fatalf("%s: DecodePayload(%q): %v", v.Name, s, err)
			}
			if err := Verify(p, secrets, now); err != nil {
				t.Errorf("%s: Verify = %v, want nil", v.Name, err)
			}
		}
	}
}

// goChallenge is testdata/go-challenge.json: a challenge Go made, for vectors.mjs to solve with altcha-lib.
type goChallenge struct {
	Secrets struct {
		Signature    string `json:"signature"`
		KeySignature string `json:"keySignature"`
	} `json:"secrets"`
	Counter   uint32    `json:"counter"`
	Challenge Challenge `json:"challenge"`
}

func TestGoChallengeFile(t *testing.T) {
	path := filepath.Join("testdata", "go-challenge.json")
	if *update {
		var g goChallenge
		g.Secrets.Signature, g.Secrets.KeySignature = "go-signature-secret", "go-key-secret"
		g.Counter = 77
		c, err := Create(Options{Cost: 1000, Counter: g.Counter, ExpiresAt: farFuture, Data: map[string]string{"screening": "scr-go"}},
			Secrets{Signature: []byte(g.Secrets.Signature), KeySignature: []byte(g.Secrets.KeySignature)})
		if err != nil {
			t.Fatal(err)
		}
		g.Challenge = c
		data, _ := json.MarshalIndent(g, "", "  ")
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote", path, "; now run vectors.mjs (see its header) for go-solution.json")
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g goChallenge
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(filepath.Join("testdata", "go-solution.json"))
	if err != nil {
		t.Fatal(err)
	}
	var solved struct {
		Solution Solution `json:"solution"`
		Payload  string   `json:"payload"`
	}
	if err := json.Unmarshal(data, &solved); err != nil {
		t.Fatal(err)
	}
	if solved.Solution.Counter != g.Counter {
		t.Errorf("altcha-lib solved at counter %d, want the secret %d", solved.Solution.Counter, g.Counter)
	}
	p, err := DecodePayload(solved.Payload)
	if err != nil {
		t.Fatal(err)
	}
	secrets := Secrets{Signature: []byte(g.Secrets.Signature), KeySignature: []byte(g.Secrets.KeySignature)}
	for _, s := range []Secrets{secrets, {Signature: secrets.Signature}} {
		if err := Verify(p, s, now); err != nil {
			t.Errorf("Verify(altcha-lib's solution of the Go challenge) = %v, want nil", err)
		}
	}
}

func TestKeyWithoutThePrefixRefused(t *testing.T) {
	f, secrets := readVectors(t)
	for _, v := range f.Vectors {
		p, err := DecodePayload(v.payloadOf())
		if err != nil {
			t.Fatal(err)
		}
		params := p.Challenge.Parameters
		nonce, _ := hex.DecodeString(params.Nonce)
		salt, _ := hex.DecodeString(params.Salt)
		// The true key of a counter that misses the prefix: honest work, but not a solution.
		for counter := uint32(0); counter < 1000; counter++ {
			key, err := deriveKey(params, salt, password(nonce, counter))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(hex.EncodeToString(key), strings.ToLower(params.KeyPrefix)) {
				p.Solution = Solution{Counter: counter, DerivedKey: hex.EncodeToString(key)}
				break
			}
		}
		if err := Verify(p, Secrets{Signature: secrets.Signature}, now); !errors.Is(err, ErrSolution) {
			t.Errorf("%s: Verify of counter %d's key = %v, want %v", v.Name, p.Solution.Counter, err, ErrSolution)
		}
	}
}

func TestPayloadWithPlusTurnedIntoSpacesVerifies(t *testing.T) {
	secrets := Secrets{Signature: []byte("sig"), KeySignature: []byte("key")}
	for tries := 0; ; tries++ {
		c, err := Create(Options{Cost: 10, Counter: 4, Data: map[string]string{"screening": "~~~>>>~~~>>>"}}, secrets)
		if err != nil {
			t.Fatal(err)
		}
		sol, err := Solve(context.Background(), c, 1)
		if err != nil {
			t.Fatal(err)
		}
		encoded := Payload{Challenge: c, Solution: sol}.Encode()
		if !strings.Contains(encoded, "+") {
			if tries == 100 {
				t.Fatal("no payload with a '+' in 100 tries")
			}
			continue // the data's place in the JSON shifted its bits off '+'
		}
		p, err := DecodePayload(strings.ReplaceAll(encoded, "+", " "))
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(p, secrets, now); err != nil {
			t.Errorf("Verify = %v, want nil", err)
		}
		return
	}
}
