package sdk

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ContextNumber returns the number a request's context object (its
// Context: JSON) holds under key, reading the object's top level only.
// found is false when the context is empty or null, or holds no such
// member or null under key; err names what is wrong when the context is
// not a JSON object or key holds something other than a number.
//
// It answers what encoding/json answers when the context is decoded into
// a map of raw members and the member under key into a float64 (the last
// of repeated keys; names matched exactly, escapes decoded; a number out
// of range elsewhere in the context is no error), but reads the bytes in
// one pass with no reflection and no allocation: in WebAssembly,
// json.Unmarshal of a three-member context into a struct costs about
// 14 µs a call, more than georank's own work over 50 candidates
// (BenchmarkContextNumber measures both natively).
func ContextNumber(context []byte, key string) (v float64, found bool, err error) {
	s := contextScanner{b: context}
	s.space()
	if s.i == len(s.b) {
		return 0, false, nil
	}
	if s.literal("null") {
		if s.space(); s.i != len(s.b) {
			return 0, false, s.fail("after null")
		}
		return 0, false, nil
	}
	if s.b[s.i] != '{' {
		return 0, false, fmt.Errorf("context: %w: not an object (begins with %q)", ErrContext, s.b[s.i])
	}
	s.i++
	var num []byte // the value under key, last seen
	kind := byte(0)
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
	} else {
		for {
			s.space()
			start := s.i
			if !s.string() {
				return 0, false, s.fail("in a member's name")
			}
			match := s.keyIs(s.b[start:s.i], key)
			s.space()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return 0, false, s.fail("after a member's name")
			}
			s.i++
			s.space()
			start = s.i
			if !s.value(0) {
				return 0, false, s.fail("in a member's value")
			}
			if match {
				num, kind = s.b[start:s.i], s.b[start]
			}
			s.space()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.i < len(s.b) && s.b[s.i] == '}' {
				s.i++
				break
			}
			return 0, false, s.fail("after a member")
		}
	}
	if s.space(); s.i != len(s.b) {
		return 0, false, s.fail("after the object")
	}
	switch {
	case num == nil || kind == 'n': // absent, or null
		return 0, false, nil
	case kind != '-' && (kind < '0' || kind > '9'):
		return 0, false, fmt.Errorf("context: %w: %q is %.20s, not a number", ErrContext, key, num)
	}
	v, err = strconv.ParseFloat(unsafeString(num), 64)
	if err != nil {
		return 0, false, fmt.Errorf("context: %w: %q is %.20s, out of a number's range", ErrContext, key, num)
	}
	return v, true, nil
}

// ErrContext is the error ContextNumber wraps for a context it cannot read.
var ErrContext = errors.New("malformed context")

// maxContextDepth is how deep ContextNumber follows arrays and objects
// nested in a member's value (encoding/json's own limit).
const maxContextDepth = 10000

// contextScanner checks JSON's grammar over b from i on, byte by byte,
// with no allocation.
type contextScanner struct {
	b []byte
	i int
}

// fail is the error for a syntax error at the scanner's place.
func (s *contextScanner) fail(where string) error {
	if s.i >= len(s.b) {
		return fmt.Errorf("context: %w: ends %s", ErrContext, where)
	}
	return fmt.Errorf("context: %w: unexpected %q at byte %d, %s", ErrContext, s.b[s.i], s.i, where)
}

func (s *contextScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// literal reads lit if it is next.
func (s *contextScanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// keyIs reports whether the quoted string raw (quotes included), decoded
// as encoding/json decodes it, is key. A name of plain ASCII is compared
// as it is; one with an escape or other bytes is decoded first.
func (s *contextScanner) keyIs(raw []byte, key string) bool {
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			var buf [64]byte
			return string(appendUnquoted(buf[:0], inner)) == key
		}
	}
	return string(inner) == key
}

// appendUnquoted appends the string inner (a JSON string's bytes between
// its quotes, of valid grammar) decodes to, as encoding/json decodes it:
// escapes, surrogate pairs, and U+FFFD for a lone surrogate and for each
// byte that is not UTF-8.
func appendUnquoted(dst, inner []byte) []byte {
	for i := 0; i < len(inner); {
		c := inner[i]
		switch {
		case c == '\\':
			e := inner[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(inner[i:])
				i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if len(inner)-i >= 6 && inner[i] == '\\' && inner[i+1] == 'u' {
						r2 = hex4(inner[i+2:])
					}
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						r = pair
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(inner[i:])
			dst = utf8.AppendRune(dst, r)
			i += size
		}
	}
	return dst
}

// hex4 is the value of four hexadecimal digits, -1 if they are not.
func hex4(h []byte) rune {
	if len(h) < 4 {
		return -1
	}
	var r rune
	for _, c := range h[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// string reads a string, quotes included.
func (s *contextScanner) string() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			s.i++
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s.b)-s.i < 5 {
					return false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				s.i += 4
			default:
				return false
			}
		}
	}
	return false
}

// digits reads one digit or more.
func (s *contextScanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// number reads a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *contextScanner) number() bool {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return false
	case s.b[s.i] == '0':
		s.i++
	case !s.digits():
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// value reads any value, depth levels of arrays and objects in.
func (s *contextScanner) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.string()
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case '[', '{':
		if depth >= maxContextDepth {
			return false
		}
		object := s.b[s.i] == '{'
		end := byte(']')
		if object {
			end = '}'
		}
		s.i++
		s.space()
		if s.i < len(s.b) && s.b[s.i] == end {
			s.i++
			return true
		}
		for {
			s.space()
			if object {
				if !s.string() {
					return false
				}
				s.space()
				if s.i >= len(s.b) || s.b[s.i] != ':' {
					return false
				}
				s.i++
				s.space()
			}
			if !s.value(depth + 1) {
				return false
			}
			s.space()
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] == end {
				s.i++
				return true
			}
			return false
		}
	default:
		return s.number()
	}
}
