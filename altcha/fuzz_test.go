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
