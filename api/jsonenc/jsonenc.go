package jsonenc

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// ErrUnsupported is returned for a number JSON cannot hold (NaN, ±Inf).
var ErrUnsupported = errors.New("unsupported value: NaN or infinity")

const hex = "0123456789abcdef"

// htmlSafe reports, for an ASCII byte, whether Marshal writes it as is.
var htmlSafe = func() (s [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		s[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return s
}()

// AppendString appends s as a JSON string.
func AppendString[S []byte | string](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends f as a JSON number; NaN and ±Inf are refused.
func AppendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, ErrUnsupported
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 as e-9
		b = b[:n-1]
	}
	return b, nil
}

// maxDepth bounds the nesting of []any and map values AppendValue walks
// itself; deeper values go to encoding/json.
const maxDepth = 16

// AppendValue appends v as JSON: strings, float64s, bools, nil, []any,
// []float64 and map[string]any (keys sorted) by itself, anything else
// through json.Marshal.
func AppendValue(b []byte, v any) ([]byte, error) { return appendValue(b, v, 0) }

func appendValue(b []byte, v any, depth int) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case string:
		return AppendString(b, x), nil
	case float64:
		return AppendFloat(b, x)
	case bool:
		return strconv.AppendBool(b, x), nil
	case nil:
		return append(b, "null"...), nil
	case []float64:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, f := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = AppendFloat(b, f); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case []any:
		if x == nil || depth >= maxDepth {
			break
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		if x == nil || depth >= maxDepth {
			break
		}
		return appendObject(b, x, nil, depth)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// AppendObject appends m as a JSON object, its keys sorted as Marshal
// sorts them; keys is scratch space for them, kept for the next call (nil
// is fine).
func AppendObject(b []byte, m map[string]any, keys *[]string) ([]byte, error) {
	return appendObject(b, m, keys, 0)
}

func appendObject(b []byte, m map[string]any, keys *[]string, depth int) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var ks []string
	if keys != nil {
		ks = (*keys)[:0]
	}
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	if keys != nil {
		*keys = ks
	}
	b = append(b, '{')
	var err error
	for i, k := range ks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, k), ':')
		if b, err = appendValue(b, m[k], depth+1); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
