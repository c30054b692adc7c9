// Package strictjson checks the JSON users send before it is decoded, so
// that nothing in it is silently rewritten or ignored. Go's encoding/json
// replaces invalid UTF-8 and lone UTF-16 surrogate escapes with U+FFFD,
// matches keys case-insensitively, keeps the last of duplicate keys and,
// unless asked, ignores unknown keys. Check refuses all of those, and values
// of the wrong type, in one pass over the bytes that allocates nothing when
// the input is good; its errors name the field and what it should be, in
// the words of the JSON API, never Go's type names.
//
// A Schema comes from a Go type's json tags (For); free-form parts (a
// json.RawMessage or an interface field: a bleve query, a mapping, a
// plugin's config) may hold any JSON, but still only valid UTF-8 and no
// duplicate keys, at any depth. CheckAny checks a value that is free-form
// throughout, and CheckObject a document: free-form, but an object, with
// one field looked up on the way.
package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of objects and arrays accepted, as in
// encoding/json.
const MaxDepth = 10000

// kind is what a JSON value must be.
type kind uint8

const (
	kAny    kind = iota // any JSON (free-form)
	kString             // a string
	kTime               // an RFC 3339 time string (time.Time)
	kInt                // an integer that fits in 64 bits
	kUint               // a non-negative integer that fits in 64 bits
	kNumber             // any number
	kBool               // true or false
	kArray              // an array of elem
	kObject             // an object with fields
	kMap                // an object whose values are elem
)

// want is how an error names a kind.
var want = [...]string{kAny: "a JSON value", kString: "a string", kTime: `a time in RFC 3339 form ("2006-01-02T15:04:05Z")`,
	kInt: "an integer", kUint: "an integer >= 0", kNumber: "a number", kBool: "true or false", kArray: "an array",
	kObject: "an object", kMap: "an object"}

// Schema is what a JSON value must look like. Make one with For.
type Schema struct {
	kind   kind
	elem   *Schema // kArray, kMap
	fields []field // kObject, at most 64
	known  string  // kObject: the field names, for messages
}

type field struct {
	name   string
	schema *Schema
}

var (
	anySchema = &Schema{kind: kAny}
	schemas   sync.Map // reflect.Type → *Schema
	// Types whose JSON form is not their Go shape.
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
	unmarshalerTyp = reflect.TypeFor[json.Unmarshaler]()
)

// For returns the schema of a Go type as encoding/json reads it: a struct
// is an object of the fields its json tags name (embedded structs'
// fields inline), a map with string keys an object of any keys, a slice
// an array, json.RawMessage and interfaces any JSON, time.Time an RFC 3339
// string. Null is accepted for every field, as encoding/json does (it
// leaves the field as it was). A struct with an UnmarshalJSON method is
// taken to read the JSON its tags describe; any other type with one is
// free-form. Schemas are made once per type and cached.
func For(t reflect.Type) *Schema {
	if s, ok := schemas.Load(t); ok {
		return s.(*Schema)
	}
	s := build(t, map[reflect.Type]*Schema{})
	actual, _ := schemas.LoadOrStore(t, s)
	return actual.(*Schema)
}

func build(t reflect.Type, seen map[reflect.Type]*Schema) *Schema {
	if s, ok := seen[t]; ok {
		return s
	}
	switch t {
	case rawMessageType:
		return anySchema
	case timeType:
		return &Schema{kind: kTime}
	}
	if t.Kind() != reflect.Struct && t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(unmarshalerTyp) {
		return anySchema
	}
	switch t.Kind() {
	case reflect.Pointer:
		return build(t.Elem(), seen)
	case reflect.String:
		return &Schema{kind: kString}
	case reflect.Bool:
		return &Schema{kind: kBool}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &Schema{kind: kInt}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &Schema{kind: kUint}
	case reflect.Float32, reflect.Float64:
		return &Schema{kind: kNumber}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Schema{kind: kString} // []byte: base64
		}
		return &Schema{kind: kArray, elem: build(t.Elem(), seen)}
	case reflect.Array:
		return &Schema{kind: kArray, elem: build(t.Elem(), seen)}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return anySchema
		}
		return &Schema{kind: kMap, elem: build(t.Elem(), seen)}
	case reflect.Struct:
		s := &Schema{kind: kObject}
		seen[t] = s
		addFields(s, t, seen)
		if len(s.fields) > 64 {
			panic(fmt.Sprintf("strictjson: %s has %d JSON fields, more than 64", t, len(s.fields)))
		}
		names := make([]string, len(s.fields))
		for i, f := range s.fields {
			names[i] = f.name
		}
		s.known = strings.Join(names, ", ")
		return s
	}
	return anySchema
}

// addFields adds a struct's JSON fields to s, as encoding/json names them.
func addFields(s *Schema, t reflect.Type, seen map[reflect.Type]*Schema) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				addFields(s, et, seen)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs := build(ft, seen)
		if strings.Contains(","+opts+",", ",string,") {
			fs = &Schema{kind: kString}
		}
		s.fields = append(s.fields, field{name: name, schema: fs})
	}
}

// index returns the field named exactly key, or -1.
func (s *Schema) index(key []byte) int {
	for i := range s.fields {
		if string(key) == s.fields[i].name {
			return i
		}
	}
	return -1
}

// errKind classifies an Error.
type errKind uint8

const (
	errSyntax errKind = iota
	errUTF8
	errSurrogate
	errType
	errUnknown
	errDuplicate
	errDepth
	errTrailing
	errRange
	errTime
	errFields
)

// Error is a refused input: where it is and what is wrong, in words a
// caller can act on.
type Error struct {
	// Offset is the byte of the input where the problem is.
	Offset int
	// Path names where the problem is: "size", "facets.cuisine.field",
	// "sort[1]", or "" for the whole value.
	Path string

	kind    errKind
	inKey   bool   // errUTF8, errSurrogate: in a field name
	key     string // errUnknown, errDuplicate: the field, quoted
	want    string // errType, errRange: what it must be
	got     string // errType: what it is; errRange: the number
	detail  string // errSyntax
	suggest string // errUnknown: the field's right spelling
	known   string // errUnknown: every field of the object
	limit   int    // errDepth: the deepest nesting accepted; errFields: the most fields
}

// TooDeep reports whether the input was refused for nesting deeper than
// its limit (MaxDepth, or CheckLimited's or CheckDocument's).
func (e *Error) TooDeep() bool { return e.kind == errDepth }

// TooManyFields reports whether a document was refused for more distinct
// field paths than CheckDocument's limit.
func (e *Error) TooManyFields() bool { return e.kind == errFields }

// OutOfRange reports whether a number was refused for its range: an
// integer field's, or in CheckDocument a number float64 cannot hold.
func (e *Error) OutOfRange() bool { return e.kind == errRange }

// Limit is the limit a TooDeep or TooManyFields error is over.
func (e *Error) Limit() int { return e.limit }

func (e *Error) Error() string {
	in := ""
	if e.Path != "" {
		in = " in " + e.Path
	}
	switch e.kind {
	case errUTF8, errSurrogate:
		what := "invalid UTF-8"
		if e.kind == errSurrogate {
			what = `an invalid \u escape (a lone UTF-16 surrogate)`
		}
		if e.inKey {
			return fmt.Sprintf("%s in a field name%s at byte %d", what, in, e.Offset)
		}
		return fmt.Sprintf("%s%s at byte %d", what, in, e.Offset)
	case errType, errRange, errTime:
		if e.Path == "" {
			return fmt.Sprintf("expected %s, got %s", e.want, e.got)
		}
		return fmt.Sprintf("%s must be %s, got %s", e.Path, e.want, e.got)
	case errUnknown:
		if e.suggest != "" {
			return fmt.Sprintf("unknown field %s%s (field names are case-sensitive: did you mean %q?)", e.key, in, e.suggest)
		}
		return fmt.Sprintf("unknown field %s%s; the fields are: %s", e.key, in, e.known)
	case errDuplicate:
		return fmt.Sprintf("duplicate field %s%s at byte %d", e.key, in, e.Offset)
	case errDepth:
		return fmt.Sprintf("nesting deeper than %d levels%s at byte %d", e.limit, in, e.Offset)
	case errFields:
		return fmt.Sprintf("more than %d fields (distinct field paths) at byte %d", e.limit, e.Offset)
	case errTrailing:
		return fmt.Sprintf("data after the JSON value at byte %d", e.Offset)
	}
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.detail)
}

// maxPath caps the length of a path in a message.
const maxPath = 200

// addKey and addIndex build the path on the way out of the value. A
// syntax or depth error needs none (its byte offset says where), and a
// long path is cut at its start.
func (e *Error) addKey(key []byte) {
	if e.kind == errSyntax || e.kind == errDepth || e.kind == errFields || strings.HasPrefix(e.Path, "…") {
		return
	}
	if len(e.Path) > maxPath {
		e.Path = "…" + e.Path
		return
	}
	k := fieldName(key)
	switch {
	case e.Path == "":
		e.Path = k
	case e.Path[0] == '[':
		e.Path = k + e.Path
	default:
		e.Path = k + "." + e.Path
	}
}

func (e *Error) addIndex(i int) {
	if e.kind == errSyntax || e.kind == errDepth || e.kind == errFields || strings.HasPrefix(e.Path, "…") {
		return
	}
	if len(e.Path) > maxPath {
		e.Path = "…" + e.Path
		return
	}
	idx := "[" + strconv.Itoa(i) + "]"
	if e.Path == "" || e.Path[0] == '[' {
		e.Path = idx + e.Path
	} else {
		e.Path = idx + "." + e.Path
	}
}

// fieldName renders a key in a path: as it is when it is a plain name,
// else quoted (invalid UTF-8 shown as \x escapes, never replaced).
func fieldName(key []byte) string {
	plain := len(key) > 0
	for _, c := range key {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			plain = false
			break
		}
	}
	if plain {
		return string(key)
	}
	return strconv.Quote(string(key))
}

// scanner walks JSON bytes.
type scanner struct {
	data     []byte
	pos      int
	depth    int
	maxDepth int // the deepest nesting accepted, at most MaxDepth
	// CheckObject: the top-level field looked up, and what was found.
	lookup string
	found  []byte
	folded string
	// CheckDocument: its field paths and their limit, numbers held to
	// float64's range.
	doc *docScan
}

// docScan is what CheckDocument's scan keeps of a document's fields.
type docScan struct {
	maxFields int
	// path is the FNV-1a state of the object being scanned's path;
	// inField is false at the top, where a key is a whole path.
	path    uint64
	inField bool
	fields  []uint64            // distinct, in the order first seen
	set     map[uint64]struct{} // fields, once there are many
}

// FNV-1a, 64 bits: a field path's hash is extended key by key.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// FieldHash is the hash of a field path as CheckDocument reports it: the
// keys from the document's top joined with ".", as bleve names fields
// ("address.city"; an array adds no key).
func FieldHash(path string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(path); i++ {
		h ^= uint64(path[i])
		h *= fnvPrime
	}
	return h
}

// field adds the path of key, in the object being scanned, and returns
// the path state before it (to restore once its value is scanned).
func (d *docScan) field(key []byte, at int) (saved uint64, savedIn bool, err *Error) {
	saved, savedIn = d.path, d.inField
	h := uint64(fnvOffset)
	if d.inField {
		h = (d.path ^ '.') * fnvPrime
	}
	for _, c := range key {
		h ^= uint64(c)
		h *= fnvPrime
	}
	d.path, d.inField = h, true
	if d.has(h) {
		return saved, savedIn, nil
	}
	if len(d.fields) >= d.maxFields {
		return saved, savedIn, &Error{Offset: at, kind: errFields, limit: d.maxFields}
	}
	d.fields = append(d.fields, h)
	if d.set != nil {
		d.set[h] = struct{}{}
	} else if len(d.fields) > 32 {
		d.set = make(map[uint64]struct{}, 2*len(d.fields))
		for _, f := range d.fields {
			d.set[f] = struct{}{}
		}
	}
	return saved, savedIn, nil
}

func (d *docScan) has(h uint64) bool {
	if d.set != nil {
		_, ok := d.set[h]
		return ok
	}
	for _, f := range d.fields {
		if f == h {
			return true
		}
	}
	return false
}

// Check checks that data is one JSON value of schema s (see For), with
// nothing but white space after it. Its error, an *Error, names what is
// wrong and where.
func Check(data []byte, s *Schema) error {
	_, err := CheckLimited(data, s, MaxDepth, "")
	return err
}

// CheckLimited is Check with nesting deeper than maxDepth refused (at
// most MaxDepth), returning the raw JSON of data's top-level field lookup
// (nil when it has none) from the same pass. The scan stops where the
// input goes deeper, so a request nested thousands of levels deep costs
// what its first levels do (its error's TooDeep says so), and a caller
// can bound a field's size before decoding it.
func CheckLimited(data []byte, s *Schema, maxDepth int, lookup string) (value []byte, err error) {
	sc := scanner{data: data, maxDepth: min(maxDepth, MaxDepth), lookup: lookup}
	if err := sc.check(s); err != nil {
		return nil, err
	}
	return sc.found, nil
}

// CheckAny checks that data is one JSON value of any shape: valid JSON,
// valid UTF-8 in every string and no duplicate keys in any object.
func CheckAny(data []byte) error {
	return Check(data, anySchema)
}

// CheckObject checks data as CheckAny does and that it is an object. It
// returns the raw JSON value of its field name (nil when it has none)
// and, when it has none, a field name equal to name but for case (for a
// message).
func CheckObject(data []byte, name string) (value []byte, folded string, err error) {
	sc := scanner{data: data, maxDepth: MaxDepth, lookup: name}
	sc.skipSpace()
	if sc.pos < len(data) && data[sc.pos] != '{' {
		return nil, "", &Error{Offset: sc.pos, kind: errType, want: "an object", got: sc.describe()}
	}
	if e := sc.check(anySchema); e != nil {
		return nil, "", e
	}
	return sc.found, sc.folded, nil
}

// Document is what CheckDocument found in a document.
type Document struct {
	// ID is the raw JSON value of the top-level field looked up (nil: it
	// has none, or the scan stopped before it); Folded, when it has none,
	// a top-level field name equal to it but for case.
	ID     []byte
	Folded string
	// Fields are the hashes (FieldHash) of the document's distinct field
	// paths, in the order first seen: every key at every depth, objects'
	// included, arrays adding none ({"a":[{"b":1}]} has "a" and "a.b").
	Fields []uint64
}

// CheckDocument checks data as CheckObject does, and holds it to a
// document's bounds: nesting at most maxDepth deep (the document itself
// is 1; at most MaxDepth), at most maxFields distinct field paths, every
// number within float64's range (1e400 is refused: no index can hold
// it). The scan stops at the first key past maxFields and at the first
// level past maxDepth, so a document far over either costs what its
// first part does. On an error, the Document holds what the scan found
// before it.
func CheckDocument(data []byte, lookup string, maxDepth, maxFields int) (Document, error) {
	d := &docScan{maxFields: maxFields, path: fnvOffset}
	sc := scanner{data: data, maxDepth: min(maxDepth, MaxDepth), lookup: lookup, doc: d}
	sc.skipSpace()
	if sc.pos < len(data) && data[sc.pos] != '{' {
		return Document{}, &Error{Offset: sc.pos, kind: errType, want: "an object", got: sc.describe()}
	}
	err := sc.check(anySchema)
	out := Document{ID: sc.found, Folded: sc.folded, Fields: d.fields}
	if err != nil {
		return out, err
	}
	return out, nil
}

func (sc *scanner) check(s *Schema) *Error {
	sc.skipSpace()
	if s.kind == kObject && sc.pos < len(sc.data) && sc.data[sc.pos] == 'n' {
		return sc.wrongType(s) // null is no object at the top
	}
	if err := sc.value(s); err != nil {
		return err
	}
	sc.skipSpace()
	if sc.pos < len(sc.data) {
		return &Error{Offset: sc.pos, kind: errTrailing}
	}
	return nil
}

func (sc *scanner) skipSpace() {
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

func (sc *scanner) syntax(detail string) *Error {
	if sc.pos >= len(sc.data) {
		detail = "unexpected end of input"
	}
	return &Error{Offset: sc.pos, kind: errSyntax, detail: detail}
}

// describe names the JSON value at pos, for a type error.
func (sc *scanner) describe() string {
	if sc.pos >= len(sc.data) {
		return "nothing"
	}
	switch c := sc.data[sc.pos]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't':
		return "true"
	case c == 'f':
		return "false"
	case c == 'n':
		return "null"
	case c == '-' || '0' <= c && c <= '9':
		return "a number"
	}
	return "something else"
}

func (sc *scanner) wrongType(s *Schema) *Error {
	return &Error{Offset: sc.pos, kind: errType, want: want[s.kind], got: sc.describe()}
}

// value checks one value against s.
func (sc *scanner) value(s *Schema) *Error {
	sc.skipSpace()
	if sc.pos >= len(sc.data) {
		return sc.syntax("")
	}
	k := s.kind
	switch c := sc.data[sc.pos]; c {
	case '{':
		switch k {
		case kAny:
			return sc.mapObject(anySchema)
		case kMap:
			return sc.mapObject(s.elem)
		case kObject:
			return sc.object(s)
		}
		return sc.wrongType(s)
	case '[':
		if k == kAny {
			return sc.array(anySchema)
		}
		if k != kArray {
			return sc.wrongType(s)
		}
		return sc.array(s.elem)
	case '"':
		if k != kAny && k != kString && k != kTime {
			return sc.wrongType(s)
		}
		start := sc.pos
		esc, err := sc.str()
		if err != nil {
			return err
		}
		if k == kTime {
			return sc.checkTime(start, esc)
		}
		return nil
	case 't', 'f', 'n':
		lit := "null"
		if c == 't' {
			lit = "true"
		} else if c == 'f' {
			lit = "false"
		}
		if c != 'n' && k != kAny && k != kBool {
			return sc.wrongType(s)
		}
		if len(sc.data)-sc.pos < len(lit) || string(sc.data[sc.pos:sc.pos+len(lit)]) != lit {
			return sc.syntax(fmt.Sprintf("invalid literal (%s?)", lit))
		}
		sc.pos += len(lit)
		return nil
	}
	if c := sc.data[sc.pos]; c == '-' || '0' <= c && c <= '9' {
		switch k {
		case kAny, kNumber, kInt, kUint:
		default:
			return sc.wrongType(s)
		}
		return sc.number(k)
	}
	return sc.syntax(fmt.Sprintf("invalid character %s looking for a value", quoteChar(sc.data[sc.pos])))
}

// quoteChar shows an unexpected byte.
func quoteChar(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (sc *scanner) enter() *Error {
	sc.depth++
	if sc.depth > sc.maxDepth {
		return &Error{Offset: sc.pos, kind: errDepth, limit: sc.maxDepth}
	}
	return nil
}

// object checks an object against a struct's fields: every key known,
// exactly as spelled, at most once.
func (sc *scanner) object(s *Schema) *Error {
	if err := sc.enter(); err != nil {
		return err
	}
	sc.pos++ // {
	sc.skipSpace()
	if sc.pos < len(sc.data) && sc.data[sc.pos] == '}' {
		sc.pos++
		sc.depth--
		return nil
	}
	var seen uint64
	for {
		key, keyAt, err := sc.key()
		if err != nil {
			return err
		}
		i := s.index(key)
		if i < 0 {
			e := &Error{Offset: keyAt, kind: errUnknown, key: strconv.Quote(string(key)), known: s.known}
			for _, f := range s.fields {
				if strings.EqualFold(f.name, string(key)) {
					e.suggest = f.name
				}
			}
			return e
		}
		if seen&(1<<i) != 0 {
			return &Error{Offset: keyAt, kind: errDuplicate, key: strconv.Quote(string(key))}
		}
		seen |= 1 << i
		sc.skipSpace()
		start := sc.pos
		if err := sc.value(s.fields[i].schema); err != nil {
			err.addKey(key)
			return err
		}
		if sc.depth == 1 && sc.lookup != "" && string(key) == sc.lookup {
			sc.found = sc.data[start:sc.pos]
		}
		if done, err := sc.next('}'); done || err != nil {
			return err
		}
	}
}

// key reads an object's key and the colon after it. The key is
// unescaped when it holds escapes.
func (sc *scanner) key() (key []byte, at int, err *Error) {
	sc.skipSpace()
	if sc.pos >= len(sc.data) || sc.data[sc.pos] != '"' {
		return nil, 0, sc.syntax("expected a field name in double quotes")
	}
	at = sc.pos
	esc, err := sc.str()
	if err != nil {
		err.inKey = true
		return nil, 0, err
	}
	key = sc.data[at+1 : sc.pos-1]
	if esc {
		var s string
		if json.Unmarshal(sc.data[at:sc.pos], &s) != nil {
			return nil, 0, &Error{Offset: at, kind: errSyntax, detail: "invalid escape in a field name"}
		}
		key = []byte(s)
	}
	sc.skipSpace()
	if sc.pos >= len(sc.data) || sc.data[sc.pos] != ':' {
		return nil, 0, sc.syntax("expected ':' after a field name")
	}
	sc.pos++
	return key, at, nil
}

// next reads the ',' or the closing byte after an element.
func (sc *scanner) next(closing byte) (done bool, err *Error) {
	sc.skipSpace()
	if sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case ',':
			sc.pos++
			return false, nil
		case closing:
			sc.pos++
			sc.depth--
			return true, nil
		}
	}
	return true, sc.syntax(fmt.Sprintf("expected ',' or '%c'", closing))
}

// keySet finds duplicate keys of one object; small objects need no
// allocation.
type keySet struct {
	small [16][]byte
	n     int
	more  map[string]struct{}
}

// add adds key and reports whether the object had it already.
func (ks *keySet) add(key []byte) bool {
	if ks.more != nil {
		if _, dup := ks.more[string(key)]; dup {
			return true
		}
		ks.more[string(key)] = struct{}{}
		return false
	}
	for _, k := range ks.small[:ks.n] {
		if string(k) == string(key) {
			return true
		}
	}
	if ks.n < len(ks.small) {
		ks.small[ks.n] = key
		ks.n++
		return false
	}
	ks.more = make(map[string]struct{}, 2*len(ks.small))
	for _, k := range ks.small {
		ks.more[string(k)] = struct{}{}
	}
	ks.more[string(key)] = struct{}{}
	return false
}

// mapObject checks an object of any keys (each once) whose values are
// elem.
func (sc *scanner) mapObject(elem *Schema) *Error {
	if err := sc.enter(); err != nil {
		return err
	}
	top := sc.depth == 1 && sc.lookup != ""
	sc.pos++ // {
	sc.skipSpace()
	if sc.pos < len(sc.data) && sc.data[sc.pos] == '}' {
		sc.pos++
		sc.depth--
		return nil
	}
	var keys keySet
	for {
		key, keyAt, err := sc.key()
		if err != nil {
			return err
		}
		if keys.add(key) {
			return &Error{Offset: keyAt, kind: errDuplicate, key: strconv.Quote(string(key))}
		}
		var saved uint64
		var savedIn bool
		if sc.doc != nil {
			if saved, savedIn, err = sc.doc.field(key, keyAt); err != nil {
				return err
			}
		}
		sc.skipSpace()
		start := sc.pos
		if err := sc.value(elem); err != nil {
			err.addKey(key)
			return err
		}
		if sc.doc != nil {
			sc.doc.path, sc.doc.inField = saved, savedIn
		}
		if top {
			if string(key) == sc.lookup {
				sc.found, sc.folded = sc.data[start:sc.pos], ""
			} else if sc.found == nil && strings.EqualFold(string(key), sc.lookup) {
				sc.folded = string(key)
			}
		}
		if done, err := sc.next('}'); done || err != nil {
			return err
		}
	}
}

// array checks an array whose elements are elem.
func (sc *scanner) array(elem *Schema) *Error {
	if err := sc.enter(); err != nil {
		return err
	}
	sc.pos++ // [
	sc.skipSpace()
	if sc.pos < len(sc.data) && sc.data[sc.pos] == ']' {
		sc.pos++
		sc.depth--
		return nil
	}
	for i := 0; ; i++ {
		if err := sc.value(elem); err != nil {
			err.addIndex(i)
			return err
		}
		if done, err := sc.next(']'); done || err != nil {
			return err
		}
	}
}

// str checks the string at pos (its opening quote): escapes, UTF-8 and
// no raw control characters. It reports whether the string holds
// escapes.
func (sc *scanner) str() (esc bool, err *Error) {
	d := sc.data
	sc.pos++ // "
	for sc.pos < len(d) {
		c := d[sc.pos]
		switch {
		case c == '"':
			sc.pos++
			return esc, nil
		case c == '\\':
			esc = true
			if err := sc.escape(); err != nil {
				return esc, err
			}
		case c < 0x20:
			return esc, sc.syntax("a control character in a string (it must be escaped)")
		case c < utf8.RuneSelf:
			sc.pos++
		default:
			r, size := utf8.DecodeRune(d[sc.pos:])
			if r == utf8.RuneError && size <= 1 {
				return esc, &Error{Offset: sc.pos, kind: errUTF8}
			}
			sc.pos += size
		}
	}
	return esc, sc.syntax("")
}

// escape checks one escape sequence at pos; a \u escape of a UTF-16
// surrogate must be a high one followed by a low one.
func (sc *scanner) escape() *Error {
	d := sc.data
	at := sc.pos
	if sc.pos+1 >= len(d) {
		sc.pos = len(d)
		return sc.syntax("")
	}
	switch d[sc.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		sc.pos += 2
		return nil
	case 'u':
	default:
		sc.pos++
		return sc.syntax("invalid escape in a string")
	}
	r, ok := hex4(d, sc.pos+2)
	if !ok {
		return sc.syntax(`invalid \u escape in a string`)
	}
	sc.pos += 6
	switch {
	case 0xDC00 <= r && r <= 0xDFFF:
		return &Error{Offset: at, kind: errSurrogate}
	case 0xD800 <= r && r <= 0xDBFF:
		if sc.pos+1 >= len(d) || d[sc.pos] != '\\' || d[sc.pos+1] != 'u' {
			return &Error{Offset: at, kind: errSurrogate}
		}
		lo, ok := hex4(d, sc.pos+2)
		if !ok {
			return sc.syntax(`invalid \u escape in a string`)
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return &Error{Offset: at, kind: errSurrogate}
		}
		sc.pos += 6
	}
	return nil
}

func hex4(d []byte, at int) (rune, bool) {
	if at+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number checks a number at pos, by JSON's grammar and, for an integer
// kind, that it is a whole number in range.
func (sc *scanner) number(k kind) *Error {
	d := sc.data
	start := sc.pos
	neg := d[sc.pos] == '-'
	if neg {
		sc.pos++
	}
	digits := sc.pos
	switch {
	case sc.pos < len(d) && d[sc.pos] == '0':
		sc.pos++
	case sc.pos < len(d) && '1' <= d[sc.pos] && d[sc.pos] <= '9':
		for sc.pos < len(d) && '0' <= d[sc.pos] && d[sc.pos] <= '9' {
			sc.pos++
		}
	default:
		return sc.syntax("invalid number")
	}
	intEnd := sc.pos
	whole := true
	if sc.pos < len(d) && d[sc.pos] == '.' {
		whole = false
		sc.pos++
		if sc.pos >= len(d) || d[sc.pos] < '0' || d[sc.pos] > '9' {
			return sc.syntax("invalid number: a digit must follow the decimal point")
		}
		for sc.pos < len(d) && '0' <= d[sc.pos] && d[sc.pos] <= '9' {
			sc.pos++
		}
	}
	exp := false
	if sc.pos < len(d) && (d[sc.pos] == 'e' || d[sc.pos] == 'E') {
		whole, exp = false, true
		sc.pos++
		if sc.pos < len(d) && (d[sc.pos] == '+' || d[sc.pos] == '-') {
			sc.pos++
		}
		if sc.pos >= len(d) || d[sc.pos] < '0' || d[sc.pos] > '9' {
			return sc.syntax("invalid number: a digit must follow the exponent")
		}
		for sc.pos < len(d) && '0' <= d[sc.pos] && d[sc.pos] <= '9' {
			sc.pos++
		}
	}
	if k == kAny && sc.doc != nil && (exp || intEnd-digits > 300) { // else it fits
		// A number float64 cannot hold (1e400) is refused: encoding/json
		// fails on it, so no index could hold the document.
		if _, err := strconv.ParseFloat(string(d[start:sc.pos]), 64); err != nil {
			return &Error{Offset: start, kind: errRange, want: "a number that fits in a 64-bit float", got: shorten(d[start:sc.pos])}
		}
	}
	if k != kInt && k != kUint {
		return nil
	}
	if !whole || (neg && k == kUint && string(d[digits:intEnd]) != "0") {
		return &Error{Offset: start, kind: errType, want: want[k], got: shorten(d[start:sc.pos])}
	}
	limit := "9223372036854775807"
	switch {
	case k == kUint:
		limit = "18446744073709551615"
	case neg:
		limit = "9223372036854775808"
	}
	if n := d[digits:intEnd]; len(n) > len(limit) || len(n) == len(limit) && string(n) > limit {
		return &Error{Offset: start, kind: errRange, want: want[k] + " that fits in 64 bits", got: shorten(d[start:sc.pos])}
	}
	return nil
}

// shorten shows a literal in a message, cut at 40 bytes.
func shorten(lit []byte) string {
	if len(lit) > 40 {
		return string(lit[:40]) + "…"
	}
	return string(lit)
}

// checkTime checks the string at start (pos is past it) is an RFC 3339
// time.
func (sc *scanner) checkTime(start int, esc bool) *Error {
	raw := sc.data[start+1 : sc.pos-1]
	s := string(raw)
	if esc {
		if json.Unmarshal(sc.data[start:sc.pos], &s) != nil {
			return &Error{Offset: start, kind: errTime, want: want[kTime], got: "an invalid string"}
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		shown := strconv.Quote(s)
		if len(shown) > 40 {
			shown = shown[:40] + "…"
		}
		return &Error{Offset: start, kind: errTime, want: want[kTime], got: shown}
	}
	return nil
}

// Describe turns an error of encoding/json (after Check passed: a number
// out of its field's range, a bad time, a field's own UnmarshalJSON)
// into words for the caller, naming the field and what it should be;
// never Go's type names. An error it does not know is "invalid value".
func Describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		w := want[kAny]
		if te.Type != nil {
			w = want[For(te.Type).kind]
		}
		got := te.Value
		switch got {
		case "string", "number", "bool", "array", "object":
			got = map[string]string{"string": "a string", "number": "a number", "bool": "a boolean", "array": "an array", "object": "an object"}[got]
		default:
			got, _ = strings.CutPrefix(got, "number ")
		}
		// The path's segments are JSON names, but for an embedded struct's
		// Go name (an "Alias" type, say): no JSON name starts upper case
		// in Quarry's API or bleve's.
		var path []string
		for _, seg := range strings.Split(te.Field, ".") {
			if seg != "" && !('A' <= seg[0] && seg[0] <= 'Z') {
				path = append(path, seg)
			}
		}
		if len(path) == 0 {
			return fmt.Sprintf("expected %s, got %s", w, got)
		}
		return fmt.Sprintf("%s must be %s, got %s", strings.Join(path, "."), w, got)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return "expected " + want[kTime] + ", got " + strconv.Quote(pe.Value)
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Error()
	}
	return "invalid value"
}
