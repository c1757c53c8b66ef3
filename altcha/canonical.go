// canonical.go writes JSON as altcha-lib signs it: JSON.stringify of sortKeys, from a value parsed in order.
package altcha

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// member is one property of a parsed JSON object, kept in the order JSON.parse would give it.
type member struct {
	key   string
	value any
}

// object is a parsed JSON object; arrays are []any, numbers float64, and strings, booleans and null as
// encoding/json decodes them.
type object []member

// parseJSON parses one JSON value the way JSON.parse does where it matters for signing: an object's
// properties keep their first position when a key repeats (the last value wins), and numbers are float64.
func parseJSON(data []byte) (any, error) {
	// The usual payload has no array, where the order of an object's keys would survive sortKeys: decode
	// it the fast way and let the canonical writer sort. Only one with an array is parsed in order.
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if o, ok := unordered(v); ok {
		return o, nil
	}
	return parseOrdered(data)
}

// unordered turns what json.Unmarshal decoded into the values canonicalJSON writes; false if it holds an
// array.
func unordered(v any) (any, bool) {
	switch t := v.(type) {
	case []any:
		return nil, false
	case map[string]any:
		o := make(object, 0, len(t))
		for k, e := range t {
			e, ok := unordered(e)
			if !ok {
				return nil, false
			}
			o = append(o, member{k, e})
		}
		return o, true
	}
	return v, true
}

// parseOrdered parses data keeping each object's keys in JSON.parse's order.
func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var o object
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				if i := slices.IndexFunc(o, func(m member) bool { return m.key == key }); i >= 0 {
					o[i].value = v
				} else {
					o = append(o, member{key, v})
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if o == nil {
				o = object{}
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		if math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s out of range", t)
		}
		return f, nil
	default:
		return tok, nil
	}
}

// canonicalJSON is altcha-lib's canonicalJSON: the keys of every object sorted (recursively, but not
// inside arrays, as sortKeys leaves arrays alone), written as JSON.stringify writes.
func canonicalJSON(v any) []byte {
	var b bytes.Buffer
	writeJS(&b, v, true)
	return b.Bytes()
}

// writeJS writes v as JSON.stringify does; sorted says whether objects get sortKeys' order.
func writeJS(b *bytes.Buffer, v any, sorted bool) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case float64:
		b.WriteString(jsNumber(t))
	case string:
		writeJSString(b, t)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJS(b, e, false)
		}
		b.WriteByte(']')
	case object:
		b.WriteByte('{')
		for i, m := range jsPropertyOrder(t, sorted) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSString(b, m.key)
			b.WriteByte(':')
			writeJS(b, m.value, sorted)
		}
		b.WriteByte('}')
	}
}

// jsPropertyOrder is the order a JS object enumerates its properties in: array indices ("0", "7", up to
// 2^32-2) first, ascending as numbers, then the other keys in insertion order, which sortKeys made the
// default sort's (UTF-16 code units).
func jsPropertyOrder(o object, sorted bool) object {
	out := slices.Clone(o)
	if sorted {
		slices.SortStableFunc(out, func(a, b member) int { return compareUTF16(a.key, b.key) })
	}
	var indices, others object
	for _, m := range out {
		if _, ok := arrayIndex(m.key); ok {
			indices = append(indices, m)
		} else {
			others = append(others, m)
		}
	}
	slices.SortStableFunc(indices, func(a, b member) int {
		x, _ := arrayIndex(a.key)
		y, _ := arrayIndex(b.key)
		return int(int64(x) - int64(y))
	})
	return append(indices, others...)
}

// arrayIndex reports whether key is a canonical array index of JS (a property name JS orders first).
func arrayIndex(key string) (uint32, bool) {
	if key == "" || len(key) > 10 || (len(key) > 1 && key[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(key, 10, 32)
	if err != nil || n == math.MaxUint32 {
		return 0, false
	}
	return uint32(n), true
}

// compareUTF16 orders strings as Array.prototype.sort does by default: by UTF-16 code units.
func compareUTF16(a, b string) int {
	if !reachesUE000(a) || !reachesUE000(b) {
		return strings.Compare(a, b) // UTF-8 bytes sort as code points, and code points as UTF-16 below U+E000
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// reachesUE000 reports whether s holds a character from U+E000 up, where UTF-16 order and code point
// order part (a surrogate pair sorts before U+E000..U+FFFF).
func reachesUE000(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xee {
			return true
		}
	}
	return false
}

// writeJSString quotes s as JSON.stringify does: only ", \ and control characters are escaped (the short
// forms where JSON has them, else \u00xx in lowercase); <, >, &, U+2028 and all non-ASCII stay as they are.
// Invalid UTF-8 becomes U+FFFD, as encoding/json has already made it in anything parsed.
func writeJSString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// jsNumber formats f as JavaScript's Number.prototype.toString does (which JSON.stringify uses): the
// shortest digits that read back as f, plain from 1e-7 up to 1e21, else with an exponent.
func jsNumber(f float64) string {
	if f == 0 {
		return "0" // also -0
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±xx
	mantissa, expText, _ := strings.Cut(e, "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	exp, _ := strconv.Atoi(expText)
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	expSign := "+"
	if n-1 < 0 {
		expSign = "-"
	}
	expAbs := strconv.Itoa(abs(n - 1))
	if k == 1 {
		return sign + digits + "e" + expSign + expAbs
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + expSign + expAbs
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// asciiJSON escapes every non-ASCII character of a JSON text as \uXXXX (UTF-16 units), which leaves its
// meaning unchanged and makes it safe for btoa and atob, which carry one byte per character.
func asciiJSON(data []byte) []byte {
	var b bytes.Buffer
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r < utf8.RuneSelf {
			b.WriteByte(data[0])
		} else {
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		}
		data = data[size:]
	}
	return b.Bytes()
}
