package planner

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/search/query"
)

// checkKeys refuses a key of a bleve query that bleve would ignore: bleve
// picks a query's kind from the keys it knows and drops the rest, so
// {"match": "pizza", "feild": "name"} would search every field. raw is
// the query as sent and q what bleve parsed from it; every object of raw
// that is a query (q, and the queries inside it: a boolean query's
// clauses, a conjunction's conjuncts…) may hold only the keys of its
// kind. The other values (a geo shape, a date) are bleve's to check.
//
// It runs on every search, so it reads raw in place: each object's keys
// once, the values skipped, and only the queries inside looked into,
// decoding or copying nothing but a key with an escape.
func checkKeys(raw json.RawMessage, q query.Query) error {
	if q == nil {
		return nil
	}
	v := reflect.ValueOf(q)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	v = v.Elem()
	fields := queryFields(v.Type())
	// The value of each field that holds queries, by its place in
	// fields.subs: the last, as the last of a repeated key is the one
	// bleve parsed.
	var buf [4][]byte
	var subs [][]byte
	if n := len(fields.subs); n <= len(buf) {
		subs = buf[:n]
	} else {
		subs = make([][]byte, n)
	}
	var unknown []byte // the first key q's kind has not, as sent
	r := jsonList{b: raw}
	if !r.open('{') {
		return nil // not an object: bleve has said what it thinks
	}
	for {
		key, val, more := r.member()
		if !more {
			break
		}
		f, ok := fields.byKey[string(key)]
		if !ok && escaped(key) {
			f, ok = fields.byKey[unquote(key)]
		}
		switch {
		case !ok:
			if unknown == nil && !fields.isExtra(key) {
				unknown = key
			}
		case f >= 0:
			subs[f] = val
		}
	}
	if r.bad {
		return nil // not JSON: bleve has said what it thinks
	}
	if unknown != nil {
		return &unknownKeyError{kind: kindName(v.Type()), key: unquote(unknown), keys: fields.keys}
	}
	for i, sub := range subs {
		if sub == nil {
			continue
		}
		if err := checkSub(sub, v.Field(fields.subs[i])); err != nil {
			return err
		}
	}
	return nil
}

// unknownKeyError is a key that a kind of query has not; badQuery words
// it.
type unknownKeyError struct {
	kind string   // the kind as the API names it: "match phrase"
	key  string   // as sent
	keys []string // the kind's, sorted
}

func (e *unknownKeyError) Error() string { return queryProblem(e) }

// checkSub checks the queries in one field of a parsed query: a query, or
// a list of them.
func checkSub(raw []byte, fv reflect.Value) error {
	switch {
	case fv.Type() == queryType:
		if fv.IsNil() {
			return nil
		}
		return checkKeys(raw, fv.Interface().(query.Query))
	case fv.Kind() == reflect.Slice && fv.Type().Elem() == queryType:
		// bleve parses a list's every element, so the counts differ only
		// when raw is not the list it parsed; then there is nothing to
		// check.
		if n, ok := countElements(raw); !ok || n != fv.Len() {
			return nil
		}
		r := jsonList{b: raw}
		r.open('[')
		for i := 0; ; i++ {
			sub, more := r.element()
			if !more {
				break
			}
			q, _ := fv.Index(i).Interface().(query.Query)
			if err := checkKeys(sub, q); err != nil {
				return err
			}
		}
	}
	return nil
}

var queryType = reflect.TypeFor[query.Query]()

// keysOf is what a query kind's JSON may hold.
type keysOf struct {
	// byKey: each key's place in subs, or -1 for a key whose field
	// holds no query.
	byKey map[string]int
	// subs are the struct fields that hold a query or a list of them.
	subs []int
	keys []string // sorted, for the message
	// extra is a key bleve reads to pick the kind but keeps no field of
	// ("match_all", "match_none").
	extra string
}

var kinds sync.Map // reflect.Type → *keysOf

func queryFields(t reflect.Type) *keysOf {
	if k, ok := kinds.Load(t); ok {
		return k.(*keysOf)
	}
	k := &keysOf{byKey: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		k.byKey[name] = -1
		if f.Type == queryType || f.Type.Kind() == reflect.Slice && f.Type.Elem() == queryType {
			k.byKey[name] = len(k.subs)
			k.subs = append(k.subs, i)
		}
	}
	switch t {
	case reflect.TypeFor[query.MatchAllQuery]():
		k.extra = "match_all"
	case reflect.TypeFor[query.MatchNoneQuery]():
		k.extra = "match_none"
	}
	for key := range k.byKey {
		k.keys = append(k.keys, key)
	}
	if k.extra != "" {
		k.keys = append(k.keys, k.extra)
	}
	slices.Sort(k.keys)
	kinds.Store(t, k)
	return k
}

// isExtra says whether key (as sent) is the kind's extra key.
func (k *keysOf) isExtra(key []byte) bool {
	if k.extra == "" {
		return false // an empty key is no kind's
	}
	if escaped(key) {
		return unquote(key) == k.extra
	}
	return string(key) == k.extra
}

// kindName is a query kind as the API's documentation names it:
// MatchPhraseQuery → "match phrase".
func kindName(t reflect.Type) string {
	name := strings.TrimSuffix(t.Name(), "Query")
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}

// jsonList reads a JSON object's members or an array's elements where
// they are, without decoding them. JSON that is not valid (bleve has
// refused it before) ends the list and sets bad.
type jsonList struct {
	b         []byte
	i, n      int  // where the next member is; how many were read
	close     byte // '}' or ']'
	done, bad bool
}

// open starts reading at the object or array b holds (open is '{' or
// '['); false if b holds something else.
func (l *jsonList) open(open byte) bool {
	l.i = skipSpace(l.b, 0)
	if l.i >= len(l.b) || l.b[l.i] != open {
		l.done = true
		return false
	}
	l.close = open + 2 // '{'+2 == '}', '['+2 == ']'
	l.i = skipSpace(l.b, l.i+1)
	return true
}

// member is an object's next key (as sent, without its quotes) and
// value; false after the last.
func (l *jsonList) member() (key, val []byte, ok bool) {
	if !l.sep() {
		return nil, nil, false
	}
	b := l.b
	end := skipString(b, l.i)
	if end < 0 {
		return nil, nil, l.fail()
	}
	key = b[l.i+1 : end-1]
	i := skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, l.fail()
	}
	l.i = skipSpace(b, i+1)
	val, ok = l.value()
	return key, val, ok
}

// element is an array's next element; false after the last.
func (l *jsonList) element() (val []byte, ok bool) {
	if !l.sep() {
		return nil, false
	}
	return l.value()
}

// sep reads up to the next member or element: false at the end.
func (l *jsonList) sep() bool {
	if l.done {
		return false
	}
	b := l.b
	if l.i < len(b) && b[l.i] == l.close {
		l.done = true
		if skipSpace(b, l.i+1) != len(b) {
			l.bad = true
		}
		return false
	}
	if l.n > 0 {
		if l.i >= len(b) || b[l.i] != ',' {
			return l.fail()
		}
		l.i = skipSpace(b, l.i+1)
	}
	return true
}

func (l *jsonList) value() ([]byte, bool) {
	end := skipValue(l.b, l.i)
	if end < 0 {
		return nil, l.fail()
	}
	val := l.b[l.i:end]
	l.i = skipSpace(l.b, end)
	l.n++
	return val, true
}

func (l *jsonList) fail() bool {
	l.done, l.bad = true, true
	return false
}

// countElements is how many elements the JSON array b holds; false if b
// is no array.
func countElements(b []byte) (int, bool) {
	l := jsonList{b: b}
	if !l.open('[') {
		return 0, false
	}
	for {
		if _, more := l.element(); !more {
			return l.n, !l.bad
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString is where the JSON string at b[i] ends (after its closing
// quote), or -1 if there is none.
func skipString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue is where the JSON value at b[i] ends, or -1 if there is
// none.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
	return -1
}

// escaped says whether a JSON string's contents (as sent) read
// otherwise once decoded: an escape, or bytes encoding/json would
// replace.
func escaped(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// unquote is a JSON string's contents (as sent) decoded.
func unquote(s []byte) string {
	if !escaped(s) {
		return string(s)
	}
	quoted := make([]byte, 0, len(s)+2)
	quoted = append(append(append(quoted, '"'), s...), '"')
	var str string
	if json.Unmarshal(quoted, &str) != nil {
		return string(s)
	}
	return str
}
