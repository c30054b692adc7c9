package api

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// ParseDocument holds a document to its index's per-document limits,
// naming the limit, the value and the document's id, with
// CodeDocumentTooComplex; a number float64 cannot hold is bad input.
func TestParseDocument(t *testing.T) {
	small := DocumentLimits{MaxFields: 4, MaxDepth: 3}
	wide := `{"id":"w1","a":1,"b":2,"c":3,"d":4}`
	cases := []struct {
		name string
		doc  string
		lim  DocumentLimits
		code Code
		want string
	}{
		{"within", `{"id":"ok","a":{"b":[1]},"c":1}`, small, "", ""},
		{"over the fields", wide, small, CodeDocumentTooComplex, `document "w1" has more than 4 fields (distinct field paths; field 5 starts at byte 29), over the index's limit of 4 (documents.max_fields)`},
		{"over the fields, id last", `{"a":1,"b":2,"c":3,"d":4,"id":"late"}`, small, CodeDocumentTooComplex, `document "late" has more than 4 fields`},
		{"over the depth", `{"id":"deep","a":{"b":[[1]]}}`, small, CodeDocumentTooComplex, `document "deep" nests deeper than 3 levels (at byte 23), over the index's limit of 3 (documents.max_depth)`},
		{"over the default depth", `{"id":"d20","v":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`, DocumentLimits{}, CodeDocumentTooComplex, `nests deeper than 20 levels`},
		{"1e400", `{"id":"hn","v":1e400}`, small, CodeBadRequest, `malformed document "hn": v must be a number that fits in a 64-bit float, got 1e400`},
		{"no id and over", `{"a":1,"b":2,"c":3,"d":4,"e":5}`, small, CodeDocumentTooComplex, `document has more than 4 fields`},
		{"no id", `{"a":1}`, small, CodeBadRequest, `document has no "id" field`},
		{"a field _id", `{"id":"att1","_id":"victim2","t":"hijack"}`, small, CodeBadRequest, `document "att1" has a field named _id, which the index keeps for its own`},
		{"a field _all", `{"id":"a","_all":"x"}`, small, CodeBadRequest, `document "a" has a field named _all`},
		{"a nested _id is a field like any", `{"id":"ok","a":{"_id":1},"b":2}`, small, "", ""},
		{"deeper than JSON allows", `{"id":"x","v":` + strings.Repeat("[", 10001) + `}`, MaxDocumentLimits, CodeDocumentTooComplex, `nests deeper than 100 levels`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDocument([]byte(tc.doc), 1<<20, tc.lim)
			if tc.code == "" {
				if err != nil || d.ID != "ok" || len(d.Fields) != 4 {
					t.Fatalf("%+v %v", d, err)
				}
				return
			}
			if CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v (%s), want %s saying %q", err, CodeOf(err), tc.code, tc.want)
			}
			if tc.code == CodeDocumentTooComplex && !errors.Is(err, ErrDocumentTooComplex) {
				t.Error("not matched by ErrDocumentTooComplex")
			}
		})
	}
}

// FieldPaths and Document's Fields count the same paths; an index's
// limits default, and are refused past their ceilings.
func TestDocumentFieldsAndLimits(t *testing.T) {
	doc := []byte(`{"id":"a","a":{"b":[{"c":1},{"c":2,"d":[3]}]},"":{"":1}}`)
	d, err := ParseDocument(doc, 1<<20, DocumentLimits{})
	if err != nil {
		t.Fatal(err)
	}
	paths := FieldPaths(doc)
	if want := []string{"", ".", "a", "a.b", "a.b.c", "a.b.d", "id"}; !slices.Equal(paths, want) {
		t.Errorf("paths %q, want %q", paths, want)
	}
	var hs []uint64
	for _, p := range paths {
		hs = append(hs, FieldHash(p))
	}
	if !slices.Equal(slices.Sorted(slices.Values(d.Fields)), slices.Sorted(slices.Values(hs))) {
		t.Errorf("fields %x, paths' hashes %x", d.Fields, hs)
	}
	if got := (DocumentLimits{MaxDepth: 5}).Effective(); got != (DocumentLimits{MaxFields: 1000, MaxDepth: 5, MaxIndexFields: 1000}) {
		t.Errorf("effective %+v", got)
	}
	for _, l := range []DocumentLimits{{MaxFields: -1}, {MaxDepth: 101}, {MaxIndexFields: 10001}} {
		if err := l.Validate(); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "documents.max_") {
			t.Errorf("%+v: %v", l, err)
		}
	}
	if err := MaxDocumentLimits.Validate(); err != nil {
		t.Error(err)
	}
	e := TooManyIndexFields("menu", "x", 998, 5, "extra.1", DocumentLimits{})
	if want := `document "x" would take index "menu" to at least 1003 fields (it has 998; the document adds 5, "extra.1" among them), over its limit of 1000 (documents.max_index_fields)`; e.Error() != want || HTTPStatus(e.Code) != 400 {
		t.Errorf("%s (%d)", e, HTTPStatus(e.Code))
	}
}

// FuzzParseDocument: what ParseDocument accepts has an id, within the
// limits; its refusals have messages and an API code.
func FuzzParseDocument(f *testing.F) {
	f.Add([]byte(`{"id":"a","x":{"y":[1,{"z":2}]}}`))
	f.Add([]byte(`{"id":"hn","v":1e400}`))
	f.Add([]byte(`{"a":1,"b":2,"c":3,"d":4,"id":"late"}`))
	f.Add([]byte(`{"id":"x","v":[[[[[1]]]]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := DocumentLimits{MaxFields: 4, MaxDepth: 4}
		d, err := ParseDocument(b, 4096, lim)
		if err != nil {
			if err.Error() == "" || CodeOf(err) == CodeInternal {
				t.Fatalf("refusal %v (%s)", err, CodeOf(err))
			}
			return
		}
		if d.ID == "" || len(d.ID) > MaxIDBytes || len(d.Fields) > 4 || len(d.Fields) != len(FieldPaths(b)) {
			t.Fatalf("accepted %+v (%q)", d, FieldPaths(b))
		}
		if _, err := DocumentID(b, 4096); err != nil {
			t.Fatalf("ParseDocument accepted what DocumentID refuses: %v", err)
		}
	})
}

func ExampleParseDocument() {
	_, err := ParseDocument([]byte(`{"id":"w1","a":1,"b":{"c":2}}`), 1<<20, DocumentLimits{MaxFields: 2})
	fmt.Println(err)
	// Output: document "w1" has more than 2 fields (distinct field paths; field 3 starts at byte 17), over the index's limit of 2 (documents.max_fields)
}
