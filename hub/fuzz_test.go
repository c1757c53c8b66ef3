package hub

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzDecodeInbound: whatever a client sends over its socket, DecodeInbound never panics; it accepts only a
// JSON object whose "type" is "leave" (as encoding/json reads it: the last of duplicate keys, matched
// without regard to case), and refuses everything else with errBadInbound, whose message becomes a valid
// BAD_MESSAGE frame. Seeds: testdata/fuzz/FuzzDecodeInbound.
func FuzzDecodeInbound(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodeInbound(data)
		if err != nil {
			if !errors.Is(err, errBadInbound) {
				t.Fatalf("DecodeInbound(%q) error = %v, want errBadInbound", data, err)
			}
			if err.Error() == "" {
				t.Fatalf("DecodeInbound(%q) error has an empty message", data)
			}
			if in != (Inbound{}) {
				t.Errorf("DecodeInbound(%q) = %+v with an error, want the zero Inbound", data, in)
			}
			// The refusal travels back to the client: it must make a frame a client can parse.
			var frame Error
			if jerr := json.Unmarshal(ErrorMessage("BAD_MESSAGE", err.Error()), &frame); jerr != nil || frame.Message != err.Error() {
				t.Errorf("BAD_MESSAGE frame for %q does not round-trip: %v, %+v", data, jerr, frame)
			}
			if hasType(data, "leave") {
				t.Errorf("DecodeInbound(%q) refused a leave: %v", data, err)
			}
			return
		}
		if in.Type != "leave" {
			t.Fatalf("DecodeInbound(%q) = %+v, nil; want type leave or an error", data, in)
		}
		if !json.Valid(data) {
			t.Fatalf("DecodeInbound(%q) accepted invalid JSON", data)
		}
		if !hasType(data, "leave") {
			t.Fatalf("DecodeInbound(%q) accepted a message that is not an object with type leave", data)
		}
	})
}

// FuzzDecodeHello: whatever a client sends as its first message, DecodeHello never panics; it accepts only
// a JSON object whose "type" is "hello" (read as encoding/json reads it), hands back the token it carried,
// and refuses everything else with errBadHello, whose message makes a valid BAD_HELLO frame. Seeds:
// testdata/fuzz/FuzzDecodeHello.
func FuzzDecodeHello(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := DecodeHello(data)
		if err != nil {
			if !errors.Is(err, errBadHello) {
				t.Fatalf("DecodeHello(%q) error = %v, want errBadHello", data, err)
			}
			if h != (Hello{}) {
				t.Errorf("DecodeHello(%q) = %+v with an error, want the zero Hello", data, h)
			}
			var frame Error
			if jerr := json.Unmarshal(ErrorMessage("BAD_HELLO", err.Error()), &frame); jerr != nil || frame.Message != err.Error() {
				t.Errorf("BAD_HELLO frame for %q does not round-trip: %v, %+v", data, jerr, frame)
			}
			if hasType(data, "hello") && tokenIsString(data) {
				t.Errorf("DecodeHello(%q) refused a hello: %v", data, err)
			}
			return
		}
		if h.Type != "hello" || !hasType(data, "hello") {
			t.Fatalf("DecodeHello(%q) = %+v, nil; want an object with type hello, or an error", data, h)
		}
		var again map[string]any
		if err := json.Unmarshal(data, &again); err != nil {
			t.Fatalf("DecodeHello(%q) accepted what is not a JSON object: %v", data, err)
		}
		if tok, ok := again["token"].(string); ok && tok != h.Token && !hasOtherCaseKey(again, "token") {
			t.Errorf("DecodeHello(%q).Token = %q, want %q", data, h.Token, tok)
		}
	})
}

// FuzzFlatHelloAgreesWithEncodingJSON: whatever decodeFlatHello reads, encoding/json reads the same way
// into a Hello; what it leaves to encoding/json is decided there. Seeds: FuzzDecodeHello's, and these.
func FuzzFlatHelloAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"type":"hello","token":"0f3d399a740e691de3f8954af48a15dc"}`, `{"type":"hello"}`, ` { "type" : "hello" , "code" : "X-1" } `,
		`{"type":"hello","altcha":"eyJhbGciOiJTSEEtMjU2In0="}`, `{"type":"hello","token":"a","token":"b"}`, `{}`, `{"type":"hello",}`,
		`{"type":"hello"}x`, `{"Type":"hello"}`, `{"type":"hel\u006co"}`, `{"type":"hello","n":1}`, "{\"type\":\"h\xffllo\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		flat, ok := decodeFlatHello(data)
		if !ok {
			return
		}
		var want Hello
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("decodeFlatHello(%q) = %+v, but encoding/json refuses it: %v", data, flat, err)
		}
		if flat != want {
			t.Fatalf("decodeFlatHello(%q) = %+v, encoding/json reads %+v", data, flat, want)
		}
	})
}

// tokenIsString tells whether every "token" member of a JSON object (any case, duplicates included) is a
// string or null, as a hello's must be for encoding/json to read it.
func tokenIsString(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		var s string
		if strings.EqualFold(key, "token") && string(v) != "null" && json.Unmarshal(v, &s) != nil {
			return false
		}
	}
	return true
}

// hasOtherCaseKey tells whether m has a key equal to key in another case: encoding/json then fills the
// field from whichever came last, which a map no longer says.
func hasOtherCaseKey(m map[string]any, key string) bool {
	for k := range m {
		if k != key && strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// hasType is an independent reading of a message: a single JSON object whose last "type" member (any
// case, as encoding/json matches field names) is the string want.
func hasType(data []byte, want string) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if !strings.EqualFold(key, "type") {
			continue
		}
		var s string
		// A null leaves the field as it was, as it does for encoding/json's Unmarshal.
		if string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, &s); err != nil {
			return false // Unmarshal refuses the whole message when type is not a string
		}
		found = s == want
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return false
	}
	// Nothing but white space may follow the object.
	_, err := dec.Token()
	return found && errors.Is(err, io.EOF)
}
