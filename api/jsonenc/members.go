package jsonenc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrSyntax reports an object Members cannot read.
var ErrSyntax = errors.New("jsonenc: not a JSON object")

// maxSkipDepth bounds the nesting of a value Members steps over.
const maxSkipDepth = 64

// Members decodes the values of obj's top-level members named in names
// into values (values[i] for names[i], as json.Unmarshal would decode it
// into an any; left as it is when obj has no such member), in one scan of
// obj that steps over every other member without decoding it: what a
// ranker reads of a hit's stored fields, a few numbers beside a long
// text. A member named twice takes its last value, as json.Unmarshal
// would.
func Members(obj []byte, names []string, values []any) error {
	s := scan{b: obj}
	s.space()
	if !s.take('{') {
		return ErrSyntax
	}
	s.space()
	if s.take('}') {
		return s.end()
	}
	for {
		s.space()
		start := s.i
		if !s.skipString() {
			return ErrSyntax
		}
		key := obj[start+1 : s.i-1]
		s.space()
		if !s.take(':') {
			return ErrSyntax
		}
		s.space()
		start = s.i
		if !s.skipValue(0) {
			return ErrSyntax
		}
		if i := index(names, key); i >= 0 {
			v, err := decode(obj[start:s.i])
			if err != nil {
				return err
			}
			for j := i; j < len(names); j++ {
				if names[j] == names[i] {
					values[j] = v
				}
			}
		}
		s.space()
		switch {
		case s.take(','):
		case s.take('}'):
			return s.end()
		default:
			return ErrSyntax
		}
	}
}

// index is the position in names of the key written as raw (between its
// quotes), or -1.
func index(names []string, raw []byte) int {
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		var k string
		if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &k) != nil {
			return -1
		}
		raw = []byte(k)
	}
	for i, n := range names {
		if string(raw) == n {
			return i
		}
	}
	return -1
}

// decode decodes one value as json.Unmarshal into an any would, the
// common kinds (a string without escapes, a number, a literal) without
// it.
func decode(raw []byte) (any, error) {
	switch {
	case len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw):
		return string(raw[1 : len(raw)-1]), nil
	case string(raw) == "true":
		return true, nil
	case string(raw) == "false":
		return false, nil
	case string(raw) == "null":
		return nil, nil
	case isNumber(raw):
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil && !math.IsInf(f, 0) {
			return f, nil
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, ErrSyntax
	}
	return v, nil
}

func isNumber(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	for _, c := range raw {
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			return false
		}
	}
	return true
}

// scan steps through JSON text; every step checks what is left.
type scan struct {
	b []byte
	i int
}

func (s *scan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scan) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scan) end() error {
	s.space()
	if s.i != len(s.b) {
		return ErrSyntax
	}
	return nil
}

// skipString steps over a string, its quotes included.
func (s *scan) skipString() bool {
	if !s.take('"') {
		return false
	}
	for {
		j := bytes.IndexAny(s.b[s.i:], "\"\\")
		if j < 0 {
			return false
		}
		s.i += j
		if s.b[s.i] == '"' {
			s.i++
			return true
		}
		s.i += 2 // an escape: \" or \\ among them
		if s.i > len(s.b) {
			return false
		}
	}
}

// skipValue steps over one value: a string, an array or object, or a
// number or literal (up to what may follow it).
func (s *scan) skipValue(depth int) bool {
	if s.i >= len(s.b) || depth > maxSkipDepth {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		return s.skipString()
	case '[', '{':
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		s.i++
		s.space()
		if s.take(closing) {
			return true
		}
		for {
			s.space()
			if c == '{' {
				if !s.skipString() {
					return false
				}
				s.space()
				if !s.take(':') {
					return false
				}
				s.space()
			}
			if !s.skipValue(depth + 1) {
				return false
			}
			s.space()
			if s.take(closing) {
				return true
			}
			if !s.take(',') {
				return false
			}
		}
	}
	start := s.i
	for s.i < len(s.b) && strings.IndexByte(",]} \t\r\n", s.b[s.i]) < 0 {
		s.i++
	}
	return s.i > start
}
