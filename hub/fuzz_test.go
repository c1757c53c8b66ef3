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
			if leaveType(data) {
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
		if !leaveType(data) {
			t.Fatalf("DecodeInbound(%q) accepted a message that is not an object with type leave", data)
		}
	})
}

// leaveType is an independent reading of a message: a single JSON object whose last "type" member (any
// case, as encoding/json matches field names) is the string "leave".
func leaveType(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	leave := false
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
		leave = s == "leave"
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return false
	}
	// Nothing but white space may follow the object.
	_, err := dec.Token()
	return leave && errors.Is(err, io.EOF)
}
