// payload.go decodes and encodes the widget's payload: base64 of the JSON of a challenge and its solution.
package altcha

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strings"
)

// DecodePayload decodes the widget's base64 string (standard base64; URL-safe, unpadded, and '+' turned
// into ' ' by a query string are accepted too), at most MaxPayloadBytes. Like altcha-lib (JSON.parse(atob(payload))) it reads the decoded bytes as
// Latin-1, one character per byte, which is what the widget's btoa wrote. Anything that is not a JSON
// object with a challenge object holding a parameters object is ErrMalformed (wrapped, with a short
// reason); a missing or malformed solution is not, since verifySolution checks the signature first: Verify
// refuses it with ErrSolution.
func DecodePayload(s string) (Payload, error) {
	if len(s) > MaxPayloadBytes {
		return Payload{}, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(s), MaxPayloadBytes)
	}
	raw, err := decodeBase64(s)
	if err != nil {
		return Payload{}, fmt.Errorf("%w: not base64", ErrMalformed)
	}
	tree, err := parseJSON(latin1(raw))
	if err != nil {
		return Payload{}, fmt.Errorf("%w: not JSON: %v", ErrMalformed, err)
	}
	top, ok := tree.(object)
	if !ok {
		return Payload{}, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	challenge, ok := top.get("challenge").(object)
	if !ok {
		return Payload{}, fmt.Errorf("%w: no challenge object", ErrMalformed)
	}
	params, ok := challenge.get("parameters").(object)
	if !ok {
		return Payload{}, fmt.Errorf("%w: no challenge parameters", ErrMalformed)
	}
	var p Payload
	if p.Challenge.Parameters, err = readParameters(params); err != nil {
		return Payload{}, fmt.Errorf("%w: parameters: %v", ErrMalformed, err)
	}
	switch sig := challenge.get("signature").(type) {
	case nil:
	case string:
		p.Challenge.Signature = sig
	default:
		return Payload{}, fmt.Errorf("%w: signature is not a string", ErrMalformed)
	}
	p.Solution, p.solutionFault = readSolution(top.get("solution"))
	p.signed = canonicalJSON(params)
	p.decoded = p.Challenge.Parameters
	p.decoded.Data = maps.Clone(p.decoded.Data)
	return p, nil
}

// decodeBase64 accepts standard and URL-safe base64, padded or not, with spaces around it as atob does. A
// space inside is read as the '+' a query string's decoding made of it when the client did not escape it.
func decodeBase64(s string) ([]byte, error) {
	s = strings.ReplaceAll(strings.TrimRight(strings.TrimSpace(s), "="), " ", "+")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// latin1 turns each byte into the character of that code point, as atob does.
func latin1(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		out = append(out, string(rune(c))...)
	}
	return out
}

// get is the value of key, or nil when o has none.
func (o object) get(key string) any {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// readParameters reads the fields Parameters names; a field of the wrong type is an error, an absent one
// its zero value, one it does not name is left to the signature.
func readParameters(o object) (Parameters, error) {
	var p Parameters
	var err error
	str := func(key string, into *string) {
		switch v := o.get(key).(type) {
		case nil:
		case string:
			*into = v
		default:
			err = fmt.Errorf("%s is not a string", key)
		}
	}
	num := func(key string, into *int64) {
		switch v := o.get(key).(type) {
		case nil:
		case float64:
			if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
				err = fmt.Errorf("%s is not an integer", key)
			}
			*into = int64(v)
		default:
			err = fmt.Errorf("%s is not a number", key)
		}
	}
	var cost, keyLength int64
	str("algorithm", &p.Algorithm)
	str("keyPrefix", &p.KeyPrefix)
	str("keySignature", &p.KeySignature)
	str("nonce", &p.Nonce)
	str("salt", &p.Salt)
	num("cost", &cost)
	num("keyLength", &keyLength)
	num("expiresAt", &p.ExpiresAt)
	if cost > math.MaxInt32 || keyLength > math.MaxInt32 {
		return p, fmt.Errorf("cost %d or keyLength %d too large", cost, keyLength)
	}
	p.Cost, p.KeyLength = int(cost), int(keyLength)
	switch d := o.get("data").(type) {
	case nil:
	case object:
		for _, m := range d {
			if v, ok := m.value.(string); ok {
				if p.Data == nil {
					p.Data = map[string]string{}
				}
				p.Data[m.key] = v
			}
		}
	default:
		return p, fmt.Errorf("data is not an object")
	}
	return p, err
}

// readSolution reads the solution, and says what is wrong with it (verifySolution's invalidSolution).
func readSolution(v any) (Solution, string) {
	o, ok := v.(object)
	if !ok {
		return Solution{}, "no solution object"
	}
	var s Solution
	if t, ok := o.get("time").(float64); ok {
		s.Time = t
	}
	key, ok := o.get("derivedKey").(string)
	if !ok {
		return s, "derivedKey is not a string"
	}
	s.DerivedKey = key
	c, ok := o.get("counter").(float64)
	if !ok || c != math.Trunc(c) || c < 0 || c > math.MaxUint32 {
		return s, "counter is not a uint32"
	}
	s.Counter = uint32(c)
	return s, ""
}

// Encode is what the widget sends: btoa(JSON.stringify({challenge: {parameters, signature}, solution})),
// with the parameters exactly as decoded when p came from DecodePayload. Characters beyond ASCII are
// escaped, so that the result reads back the same under Latin-1 and UTF-8.
func (p Payload) Encode() string {
	params := p.signedParameters()
	var b bytes.Buffer
	b.WriteString(`{"challenge":{"parameters":`)
	b.Write(params)
	b.WriteString(`,"signature":`)
	writeJSString(&b, p.Challenge.Signature)
	b.WriteString(`},"solution":`)
	sol, _ := json.Marshal(p.Solution) // a struct of numbers and a string: it cannot fail
	b.Write(sol)
	b.WriteString(`}`)
	return base64.StdEncoding.EncodeToString(asciiJSON(b.Bytes()))
}

// signedParameters is the parameters' JSON as the signature covers it: the canonical JSON of the object
// as decoded, so that fields Parameters does not name still count, unless Challenge.Parameters changed
// since decoding (or p was never decoded), when only Parameters' own canonical JSON can be signed.
func (p Payload) signedParameters() []byte {
	if p.signed == nil || !parametersEqual(p.Challenge.Parameters, p.decoded) {
		return canonicalParameters(p.Challenge.Parameters)
	}
	return p.signed
}

// parametersEqual reports whether a and b are the same parameters.
func parametersEqual(a, b Parameters) bool {
	return a.Algorithm == b.Algorithm && a.Cost == b.Cost && a.ExpiresAt == b.ExpiresAt &&
		a.KeyLength == b.KeyLength && a.KeyPrefix == b.KeyPrefix && a.KeySignature == b.KeySignature &&
		a.Nonce == b.Nonce && a.Salt == b.Salt && maps.Equal(a.Data, b.Data)
}
