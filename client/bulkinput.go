package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/api/strictjson"
)

// The input formats Bulk reads (BulkOptions.Format).
const (
	// FormatNDJSON is one document a line (the default). A body whose
	// first character is '[' is read as a JSON array of documents
	// instead, whatever the format.
	FormatNDJSON = "ndjson"
	// FormatES is Elasticsearch's bulk format: an action line
	// ({"index": {"_id": …}}, "create" alike, or {"delete": {"_id": …}})
	// before each document line; a document without an "id" gets the
	// action's _id. "update" is refused (PATCH a document instead);
	// "create" does not check that the id is new.
	FormatES = "es"
)

// bulkItem is one entry of a bulk load's input: a document, or an id to
// delete, or what is wrong with the entry.
type bulkItem struct {
	line int // its line (NDJSON, ES) or element (a JSON array), from 1
	doc  []byte
	del  string // an id to delete, for ES's delete action
	err  error  // the entry is refused (counted, reported)
}

// bulkInput reads a bulk load's input entry by entry.
type bulkInput interface {
	// next returns the next entry; ok is false at the end. err is an
	// input that cannot be read on (the load stops).
	next() (it bulkItem, ok bool, err error)
	// consumed is how many input bytes were read so far.
	consumed() int64
}

// newBulkInput picks the reader for format, looking at the input's first
// character for a JSON array.
func newBulkInput(r io.Reader, format string, maxDoc int) (bulkInput, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	lines := &lineInput{br: br, max: maxDoc}
	switch format {
	case "", FormatNDJSON:
		if first, err := firstByte(br); err == nil && first == '[' {
			return newArrayInput(br, maxDoc)
		}
		return lines, nil
	case FormatES:
		return &esInput{lines: lines}, nil
	}
	return nil, api.BadRequest("bulk format %q: use %q or %q", format, FormatNDJSON, FormatES)
}

// firstByte peeks at the input's first character that is not white space.
func firstByte(br *bufio.Reader) (byte, error) {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if err != nil {
			return 0, err
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\r', '\n':
			if n == br.Size() {
				return 0, errors.New("only white space")
			}
		default:
			return c, nil
		}
	}
}

// lineInput reads NDJSON: a document a non-empty line.
type lineInput struct {
	br   *bufio.Reader
	max  int
	read int64
	line int
	eof  bool
}

func (l *lineInput) consumed() int64 { return l.read }

// rawLine is the next non-empty line, its number, or ok false at the end.
func (l *lineInput) rawLine() (line []byte, no int, tooLong, ok bool, err error) {
	for !l.eof {
		b, n, long, rerr := readLine(l.br, l.max)
		l.read += int64(n)
		if n > 0 {
			l.line++
		}
		if rerr == io.EOF {
			l.eof = true
		} else if rerr != nil {
			return nil, 0, false, false, fmt.Errorf("read line %d: %w", l.line+1, rerr)
		}
		if long || len(bytes.TrimSpace(b)) > 0 {
			return b, l.line, long, true, nil
		}
	}
	return nil, 0, false, false, nil
}

func (l *lineInput) next() (bulkItem, bool, error) {
	line, no, long, ok, err := l.rawLine()
	if !ok || err != nil {
		return bulkItem{}, false, err
	}
	if long {
		return bulkItem{line: no, err: api.BadRequest("document is over the limit of %d bytes", l.max)}, true, nil
	}
	return bulkItem{line: no, doc: line}, true, nil
}

// arrayInput reads a JSON array of documents, element by element.
type arrayInput struct {
	dec *json.Decoder
	max int
	n   int
	end bool
}

func newArrayInput(br *bufio.Reader, max int) (bulkInput, error) {
	dec := json.NewDecoder(br)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, api.BadRequest("a JSON array of documents must start with '['")
	}
	return &arrayInput{dec: dec, max: max}, nil
}

func (a *arrayInput) consumed() int64 { return a.dec.InputOffset() }

func (a *arrayInput) next() (bulkItem, bool, error) {
	if a.end {
		return bulkItem{}, false, nil
	}
	if !a.dec.More() {
		a.end = true
		if _, err := a.dec.Token(); err != nil {
			return bulkItem{}, false, api.BadRequest("the JSON array of documents does not end with ']': %v", err)
		}
		if _, err := a.dec.Token(); err != io.EOF {
			return bulkItem{}, false, api.BadRequest("more after the JSON array of documents")
		}
		return bulkItem{}, false, nil
	}
	a.n++
	var raw json.RawMessage
	if err := a.dec.Decode(&raw); err != nil {
		// An element that is not JSON leaves the array unreadable past it.
		return bulkItem{}, false, api.BadRequest("element %d of the JSON array: %v", a.n, err)
	}
	if len(raw) > a.max {
		return bulkItem{line: a.n, err: api.BadRequest("document is over the limit of %d bytes", a.max)}, true, nil
	}
	return bulkItem{line: a.n, doc: raw}, true, nil
}

// esInput reads Elasticsearch's bulk format: an action line, then (for
// index and create) the document's line.
type esInput struct {
	lines *lineInput
}

func (e *esInput) consumed() int64 { return e.lines.consumed() }

// esAction is an action line's metadata.
type esAction struct {
	ID    *string `json:"_id"`
	Index string  `json:"_index"`
}

func (e *esInput) next() (bulkItem, bool, error) {
	line, no, long, ok, err := e.lines.rawLine()
	if !ok || err != nil {
		return bulkItem{}, false, err
	}
	bad := func(format string, args ...any) (bulkItem, bool, error) {
		return bulkItem{line: no, err: api.BadRequest(format, args...)}, true, nil
	}
	if long {
		return bad("action line is over %d bytes", e.lines.max)
	}
	var action map[string]json.RawMessage
	if err := json.Unmarshal(line, &action); err != nil || len(action) != 1 {
		return bad(`not an action line: want one of {"index": {…}}, {"create": {…}}, {"delete": {…}}`)
	}
	for verb, raw := range action {
		var meta esAction
		if err := json.Unmarshal(raw, &meta); err != nil {
			return bad("%s: its metadata is not an object with a string _id", verb)
		}
		switch verb {
		case "delete":
			if meta.ID == nil || *meta.ID == "" {
				return bad("delete: _id is required")
			}
			return bulkItem{line: no, del: *meta.ID}, true, nil
		case "index", "create":
			doc, dno, dlong, ok, err := e.lines.rawLine()
			if err != nil {
				return bulkItem{}, false, err
			}
			if !ok {
				return bad("%s: no document line after it", verb)
			}
			if dlong {
				return bulkItem{line: dno, err: api.BadRequest("document is over the limit of %d bytes", e.lines.max)}, true, nil
			}
			if meta.ID == nil {
				return bulkItem{line: dno, doc: doc}, true, nil
			}
			withID, err := withDocID(doc, *meta.ID)
			if err != nil {
				return bulkItem{line: dno, err: err}, true, nil
			}
			return bulkItem{line: dno, doc: withID}, true, nil
		case "update":
			// Its line is a partial document: consumed, refused.
			e.lines.rawLine()
			return bad("update: not taken in a bulk load; change part of a document with a JSON merge patch (PATCH …/documents/{id}, quarry patch)")
		}
		return bad("unknown action %q: want index, create or delete", verb)
	}
	return bad("not an action line")
}

// withDocID is doc with "id": id as its first member, unless it has an
// "id" already: the same one is fine, another is refused.
func withDocID(doc []byte, id string) ([]byte, error) {
	trimmed := bytes.TrimSpace(doc)
	have, _, err := strictjson.CheckObject(trimmed, "id")
	if err != nil || len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, api.BadRequest("document must be a JSON object")
	}
	quoted, _ := json.Marshal(id)
	if have != nil {
		if !sameID(have, id) {
			return nil, api.BadRequest("the action's _id %s and the document's \"id\" %s differ", quoted, have)
		}
		return doc, nil
	}
	out := make([]byte, 0, len(trimmed)+len(quoted)+8)
	out = append(out, `{"id":`...)
	out = append(out, quoted...)
	if rest := bytes.TrimSpace(trimmed[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, trimmed[1:]...), nil
}
