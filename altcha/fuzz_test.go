// fuzz_test.go feeds DecodePayload and Verify what a client could send.
package altcha

import (
	"testing"
)

func FuzzDecodePayloadVerify(f *testing.F) {
	vectors, secrets := readVectors(f)
	for _, v := range vectors.Vectors {
		for _, p := range v.payloads() {
			f.Add(p)
		}
	}
	f.Add("")
	f.Add("e30=")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePayload(s)
		if err != nil {
			return
		}
		for _, sec := range []Secrets{secrets, {Signature: secrets.Signature}} {
			if Verify(p, sec, now) != nil {
				continue
			}
			// What verifies must still verify once encoded again: Encode keeps what the signature covers.
			again, err := DecodePayload(p.Encode())
			if err != nil {
				t.Fatalf("DecodePayload(Encode()) = %v", err)
			}
			if err := Verify(again, sec, now); err != nil {
				t.Fatalf("Verify after Encode = %v, want nil", err)
			}
		}
	})
}

// FuzzParsersAgree checks that the fast parse (no arrays) and the ordered one sign the same text.
func FuzzParsersAgree(f *testing.F) {
	vectors, _ := readVectors(f)
	for _, c := range vectors.Canonical {
		f.Add(c.Input)
	}
	for _, v := range vectors.Vectors {
		f.Add(string(v.Challenge))
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, err := parseJSON([]byte(s))
		if err != nil {
			return
		}
		ordered, err := parseOrdered([]byte(s))
		if err != nil {
			t.Fatalf("parseOrdered refuses what parseJSON takes: %v", err)
		}
		if a, b := canonicalJSON(fast), canonicalJSON(ordered); string(a) != string(b) {
			t.Fatalf("canonical JSON differs:\n fast    %s\n ordered %s", a, b)
		}
	})
}
