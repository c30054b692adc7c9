package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/quarrysearch/quarry/api/strictjson"
)

// DocumentID validates one JSON document and returns its id. A document is
// a JSON object of at most maxBytes bytes with a non-empty string "id" of at
// most 512 bytes, valid UTF-8 throughout and with no key twice in any
// object: encoding/json would replace invalid bytes with U+FFFD (two ids
// that differ only there would become one document) and keep the last of
// two keys. The "id" key is matched exactly ("ID" is another field). The
// error names what is wrong and where (a byte offset in doc).
func DocumentID(doc []byte, maxBytes int) (string, error) {
	if len(doc) > maxBytes {
		return "", BadRequest("document is %d bytes, over the limit of %d", len(doc), maxBytes)
	}
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "", BadRequest("document must be a JSON object")
	}
	raw, folded, err := strictjson.CheckObject(doc, "id")
	if err != nil {
		return "", BadRequest("malformed document: %v", err)
	}
	return documentID(raw, folded)
}

// MaxIDBytes is the longest document id.
const MaxIDBytes = 512

// ValidDocumentID checks an id given on its own (to read or delete a
// document): 1 to MaxIDBytes bytes of valid UTF-8, as DocumentID accepts
// in a document; no stored document can have another.
func ValidDocumentID(id string) error {
	if id == "" || len(id) > MaxIDBytes {
		return BadRequest("document id must be 1-%d bytes, got %d", MaxIDBytes, len(id))
	}
	if at := invalidUTF8(id); at >= 0 {
		return BadRequest("document id %q is not valid UTF-8 (byte %d)", id, at)
	}
	return nil
}

// invalidUTF8 returns the offset of the first byte of s that is not valid
// UTF-8, or -1.
func invalidUTF8(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// DocumentLimits bound what documents may cost an index, as
// Elasticsearch's index.mapping.total_fields.limit and depth.limit do:
// with dynamic mapping every new field path is a new field of the index,
// and a few documents of 100,000 fields each took a node from 50 MB to
// 1.9 GB and, replayed from the stream at every start, out of memory
// again. A document over a limit is refused where it comes in
// (client.Put, client.Bulk and so the HTTP API and the CLI) with
// CodeDocumentTooComplex, naming the limit, the value and its id, and
// nothing of it is stored; the per-document limits are checked again
// where documents are applied, so one that reached the stream another
// way is skipped and counted, never indexed. Zero means the default
// (DefaultDocumentLimits); each has a ceiling (MaxDocumentLimits).
type DocumentLimits struct {
	// MaxFields caps the distinct field paths of one document: every
	// key at every depth, objects' included, an array adding none
	// ({"a":[{"b":1},{"b":2}]} has two: "a" and "a.b") (default 1000).
	MaxFields int `json:"max_fields,omitempty"`
	// MaxDepth caps how deeply a document nests objects and arrays; the
	// document itself is level 1 (default 20).
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxIndexFields caps the distinct field paths of the index: of every
	// document it was sent, counted as MaxFields counts them; a document
	// that would take the index past it is refused (default 1000). The
	// index's paths are never forgotten (a field no document holds any
	// more still counts), as in Elasticsearch's mapping.
	MaxIndexFields int `json:"max_index_fields,omitempty"`
}

// DefaultDocumentLimits are the limits of an index that sets none.
var DefaultDocumentLimits = DocumentLimits{MaxFields: 1000, MaxDepth: 20, MaxIndexFields: 1000}

// MaxDocumentLimits are the highest limits an index may set.
var MaxDocumentLimits = DocumentLimits{MaxFields: 10000, MaxDepth: 100, MaxIndexFields: 10000}

// Effective returns the limits with every zero field set to its default.
func (l DocumentLimits) Effective() DocumentLimits {
	d := &DefaultDocumentLimits
	return DocumentLimits{MaxFields: cmp.Or(l.MaxFields, d.MaxFields), MaxDepth: cmp.Or(l.MaxDepth, d.MaxDepth),
		MaxIndexFields: cmp.Or(l.MaxIndexFields, d.MaxIndexFields)}
}

// Validate checks that every limit is between 0 (the default) and its
// ceiling.
func (l *DocumentLimits) Validate() error {
	top := &MaxDocumentLimits
	for _, f := range []struct {
		name   string
		v, max int
	}{{"max_fields", l.MaxFields, top.MaxFields}, {"max_depth", l.MaxDepth, top.MaxDepth}, {"max_index_fields", l.MaxIndexFields, top.MaxIndexFields}} {
		if f.v < 0 || f.v > f.max {
			return BadRequest("documents.%s must be between 0 (the default) and %d, got %d", f.name, f.max, f.v)
		}
	}
	return nil
}

// Document is a document checked by ParseDocument.
type Document struct {
	// ID is its "id".
	ID string
	// Fields are the hashes (FieldHash) of its distinct field paths.
	Fields []uint64
}

// FieldHash is the hash of a field path ("address.city") as Document's
// Fields hold it.
func FieldHash(path string) uint64 { return strictjson.FieldHash(path) }

// ParseDocument checks a document as DocumentID does and holds it to an
// index's per-document limits (lim, made Effective): at most
// lim.MaxFields field paths and lim.MaxDepth levels (CodeDocumentTooComplex),
// and no number float64 cannot hold (1e400, CodeBadRequest). Its errors
// name the document's id when it has one. Checking the index's limit on
// fields (MaxIndexFields) is the caller's: it needs the index's fields.
func ParseDocument(doc []byte, maxBytes int, lim DocumentLimits) (Document, error) {
	lim = lim.Effective()
	if len(doc) > maxBytes {
		return Document{}, BadRequest("document is %d bytes, over the limit of %d", len(doc), maxBytes)
	}
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Document{}, BadRequest("document must be a JSON object")
	}
	d, err := strictjson.CheckDocument(doc, "id", lim.MaxDepth, lim.MaxFields)
	if err != nil {
		id := d.ID
		if id == nil { // the scan stopped before the id: look for it alone
			id, _, _ = strictjson.CheckObject(doc, "id")
		}
		return Document{}, documentError(doc, id, err, lim)
	}
	id, err := documentID(d.ID, d.Folded)
	if err != nil {
		return Document{}, err
	}
	for i, h := range reservedHashes {
		if slices.Contains(d.Fields, h) {
			return Document{}, ReservedFieldError(id, ReservedFields[i])
		}
	}
	return Document{ID: id, Fields: d.Fields}, nil
}

// ReservedFields are the fields a document may not have at its top level:
// bleve keeps them for its own, "_id" for the document's id (its "id")
// and "_all" for the field every field's text is searched through, and
// one in a document would pass for it (a field "_id" replaced the id of
// the hit it was stored with).
var ReservedFields = []string{"_id", "_all"}

var reservedHashes = []uint64{FieldHash("_id"), FieldHash("_all")}

// ReservedFieldError is the error of document id's field named field,
// one of ReservedFields.
func ReservedFieldError(id, field string) error {
	return BadRequest("document %q has a field named %s, which the index keeps for its own: rename it", id, field)
}

// documentError makes the error of a document strictjson refused; rawID
// is its "id" if the scan found one.
func documentError(doc, rawID []byte, err error, lim DocumentLimits) error {
	which := "document"
	if id, idErr := documentID(rawID, ""); idErr == nil {
		which = fmt.Sprintf("document %q", id)
	}
	var se *strictjson.Error
	if errors.As(err, &se) {
		switch {
		case se.TooManyFields():
			return &Error{Code: CodeDocumentTooComplex, Message: fmt.Sprintf(
				"%s has more than %d fields (distinct field paths; field %d starts at byte %d), over the index's limit of %d (documents.max_fields)", which, se.Limit(), se.Limit()+1, se.Offset, lim.MaxFields)}
		case se.TooDeep() && se.Limit() == lim.MaxDepth:
			return &Error{Code: CodeDocumentTooComplex, Message: fmt.Sprintf(
				"%s nests deeper than %d levels (at byte %d), over the index's limit of %d (documents.max_depth)", which, se.Limit(), se.Offset, lim.MaxDepth)}
		case se.OutOfRange():
			return BadRequest("malformed %s: %v", which, err)
		}
	}
	// Malformed JSON says where, by byte: the id, if any, may be
	// what is malformed (a key twice, invalid UTF-8).
	return BadRequest("malformed document: %v", err)
}

// documentID checks the raw JSON of a document's "id" (folded: a key
// that differs from "id" by case only, for the message) and returns it.
func documentID(raw []byte, folded string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if folded != "" {
			return "", BadRequest(`document has no "id" field (field names are case-sensitive: it has %q)`, folded)
		}
		return "", BadRequest(`document has no "id" field`)
	}
	if raw[0] != '"' {
		if integerText(raw) && len(raw) <= MaxIDBytes {
			return string(raw), nil // a number id is its decimal text
		}
		return "", BadRequest(`"id" must be a string or a whole number, got %s`, truncate(raw, 40))
	}
	var id string
	if bytes.IndexByte(raw, '\\') < 0 {
		id = string(raw[1 : len(raw)-1])
	} else if err := json.Unmarshal(raw, &id); err != nil {
		return "", BadRequest(`"id" is not a valid JSON string`)
	}
	switch {
	case id == "":
		return "", BadRequest(`"id" must not be empty`)
	case len(id) > MaxIDBytes:
		return "", BadRequest(`"id" is %d bytes, over the limit of %d`, len(id), MaxIDBytes)
	}
	return id, nil
}

// integerText reports whether raw is a JSON integer as written: an
// optional minus, then 0 or digits not starting with 0; no fraction, no
// exponent (so 42 and 42.0 are not taken for one id).
func integerText(raw []byte) bool {
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// TooManyIndexFields makes the error of a document refused because it
// would take its index past lim.MaxIndexFields: the index has at least
// have of them and the document adds added more, newField among them.
func TooManyIndexFields(index, id string, have, added int, newField string, lim DocumentLimits) *Error {
	lim = lim.Effective()
	return &Error{Code: CodeDocumentTooComplex, Message: fmt.Sprintf(
		"document %q would take index %q to at least %d fields (it has %d; the document adds %d, %q among them), over its limit of %d (documents.max_index_fields)",
		id, index, have+added, have, added, newField, lim.MaxIndexFields)}
}

// FieldPaths returns a valid document's distinct field paths, sorted,
// as Document's Fields count them (for messages: it decodes the whole
// document).
func FieldPaths(doc []byte) []string {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil
	}
	seen := map[string]bool{}
	var walk func(prefix *string, v any) // prefix nil: the top
	walk = func(prefix *string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				p := k
				if prefix != nil {
					p = *prefix + "." + k
				}
				seen[p] = true
				walk(&p, x)
			}
		case []any:
			for _, x := range v {
				walk(prefix, x)
			}
		}
	}
	walk(nil, v)
	return slices.Sorted(maps.Keys(seen))
}

// Keyword sub-fields: a string field an index's mapping does not name is
// indexed as text (bleve's dynamic mapping), and each of its values of
// KeywordMaxBytes or less also whole, as one exact term, in the field of
// its name and KeywordSuffix ("license" and "license.keyword"), as
// Elasticsearch's dynamic mapping does: facet, sort or term-query the
// sub-field for whole values. It is not stored and not part of _all.
const (
	KeywordSuffix   = ".keyword"
	KeywordMaxBytes = 256
)
