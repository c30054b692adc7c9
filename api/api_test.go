package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDocumentID(t *testing.T) {
	cases := []struct {
		doc, id, err string
	}{
		{`{"id":"a1","name":"x"}`, "a1", ""},
		{`  {"name":"x","id":"b"}  `, "b", ""},
		{`{"name":"x"}`, "", `no "id"`},
		{`{"id":null}`, "", `no "id"`},
		{`{"id":7}`, "7", ""},
		{`{"id":-12}`, "-12", ""},
		{`{"id":0}`, "0", ""},
		{`{"id":7.0}`, "", `"id" must be a string or a whole number, got 7.0`},
		{`{"id":1e3}`, "", "must be a string or a whole number"},
		{`{"id":007}`, "", "malformed"},
		{`{"id":true}`, "", "must be a string or a whole number"},
		{`{"id":""}`, "", "must not be empty"},
		{`{"id":"a"`, "", "malformed document: invalid JSON at byte 9"},
		{`{"id":"a\"b\u00e9"}`, "a\"b\u00e9", ""},
		{`{"Id":"x","id":"y"}`, "y", ""},
		// Invalid UTF-8 is refused, never replaced: these two ids were
		// both stored as "col\uFFFD", the second overwriting the first.
		{"{\"id\":\"col\xff\"}", "", "invalid UTF-8 in id at byte 10"},
		{"{\"id\":\"col\xfe\"}", "", "invalid UTF-8 in id at byte 10"},
		{`{"id":"col\udfff"}`, "", "lone UTF-16 surrogate) in id at byte 10"},
		{"{\"id\":\"a\",\"na\xc3me\":1}", "", "invalid UTF-8 in a field name at byte 13"},
		{"{\"id\":\"a\",\"tags\":[\"ok\",\"\xe2\x82\"]}", "", "invalid UTF-8 in tags[1] at byte 24"},
		{`{"ID":"x"}`, "", `no "id" field (field names are case-sensitive: it has "ID")`},
		{`{"id":"a","id":"b"}`, "", `duplicate field "id" at byte 10`},
		{`{"id":"a","n":{"x":1,"x":2}}`, "", `duplicate field "x" in n`},
		{`{"id":"a"} {"id":"b"}`, "", "data after the JSON value"},
		{`[1,2]`, "", "must be a JSON object"},
		{``, "", "must be a JSON object"},
		{`{"id":"` + strings.Repeat("x", 513) + `"}`, "", "over the limit of 512"},
		{`{"id":"a","pad":"` + strings.Repeat("x", 100) + `"}`, "", "over the limit of 64"},
	}
	for _, c := range cases {
		id, err := DocumentID([]byte(c.doc), 64+len(`{"id":"`)+513+2)
		if c.err == "over the limit of 64" {
			id, err = DocumentID([]byte(c.doc), 64)
		}
		if c.err == "" {
			if err != nil || id != c.id {
				t.Errorf("%s: got %q, %v", c.doc, id, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%.40s: error %v, want it to contain %q", c.doc, err, c.err)
		}
		if !errors.Is(err, ErrBadRequest) {
			t.Errorf("%.40s: %v is not ErrBadRequest", c.doc, err)
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []SearchRequest{{Size: -2}, {From: -2}, {TimeoutMS: -1},
		{Facets: map[string]FacetRequest{"x": {}}}}
	for _, r := range bad {
		if err := r.Validate(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: got %v", r, err)
		}
	}
	ok := SearchRequest{Q: "x", Size: 20, From: 40}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

// "size": 0 in JSON asks for no hits (NoHits); an absent size is the
// default; a negative one is refused; Go's NoHits encodes as "size": 0.
func TestSizeJSON(t *testing.T) {
	cases := []struct {
		json      string
		size, eff int
		err       string
	}{
		{`{"q":"x"}`, 0, DefaultSize, ""},
		{`{"q":"x","size":0}`, NoHits, 0, ""},
		{`{"q":"x","size":3}`, 3, 3, ""},
		{`{"q":"x","size":-1}`, 0, 0, "size must be >= 0, got -1"},
		{`{"q":"x","bogus":1}`, 0, 0, `unknown field "bogus"`},
	}
	for _, c := range cases {
		var r SearchRequest
		err := json.Unmarshal([]byte(c.json), &r)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.json, err, c.err)
			}
			continue
		}
		if err != nil || r.Size != c.size || r.EffectiveSize() != c.eff || r.Q != "x" {
			t.Errorf("%s: %+v (effective %d) %v, want size %d, effective %d", c.json, r, r.EffectiveSize(), err, c.size, c.eff)
		}
	}
	for size, want := range map[int]string{0: `{"q":"x"}`, NoHits: `{"q":"x","size":0}`, 7: `{"q":"x","size":7}`} {
		b, err := json.Marshal(SearchRequest{Q: "x", Size: size})
		if err != nil || string(b) != want {
			t.Errorf("marshal size %d: %s %v, want %s", size, b, err, want)
		}
		p := &SearchRequest{Q: "x", Size: size}
		if b, _ := json.Marshal(p); string(b) != want {
			t.Errorf("marshal *SearchRequest size %d: %s", size, b)
		}
	}
}

func FuzzDocumentID(f *testing.F) {
	f.Add([]byte(`{"id":"a"}`))
	f.Add([]byte(`{"id":"\u00e9"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := DocumentID(b, 4096)
		if err == nil && (id == "" || len(id) > 512) {
			t.Fatalf("accepted bad id %q", id)
		}
	})
}

// Effective fills every zero limit with its default and keeps the rest.
func TestLimitsEffective(t *testing.T) {
	if got := (QueryLimits{}).Effective(); got != DefaultLimits {
		t.Fatalf("zero limits: %+v", got)
	}
	got := QueryLimits{MaxTerms: 7, MaxFacets: 3}.Effective()
	want := DefaultLimits
	want.MaxTerms, want.MaxFacets = 7, 3
	if got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = QueryLimits{MaxTerms: 7}.Effective() }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// The search request's JSON is read strictly: what Go's encoding/json
// would rewrite (invalid UTF-8) or quietly take (keys in another case,
// twice, unknown ones in nested objects) is refused, naming the field and
// where; type errors are in the API's words, not Go's.
func TestSearchRequestStrict(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"wrong case", `{"Q":"x"}`, `unknown field "Q" (field names are case-sensitive: did you mean "q"?)`},
		{"wrong case size", `{"q":"x","SIZE":3}`, `did you mean "size"?`},
		{"duplicate", `{"q":"a","q":"b"}`, `duplicate field "q" at byte 9`},
		{"duplicate size", `{"size":1,"size":0}`, `duplicate field "size"`},
		{"unknown in facet", `{"facets":{"f":{"field":"a","Size":1}}}`, `unknown field "Size" in facets.f`},
		{"unknown in variant", `{"variant":{"plugin":"p","digest":"d","x":1}}`, `unknown field "x" in variant`},
		{"duplicate facet", `{"facets":{"f":{"field":"a"},"f":{"field":"b"}}}`, `duplicate field "f" in facets`},
		{"duplicate in query", `{"query":{"match":"x","field":"a","field":"b"}}`, `duplicate field "field" in query`},
		{"duplicate in context", `{"context":{"user":"a","user":"b"}}`, `duplicate field "user" in context`},
		{"string size", `{"size":"ten"}`, "size must be an integer, got a string"},
		{"fraction size", `{"size":2.5}`, "size must be an integer, got 2.5"},
		{"string partial", `{"allow_partial":"no"}`, "allow_partial must be true or false, got a string"},
		{"object sort", `{"sort":{"a":1}}`, "sort must be an array, got an object"},
		{"number field", `{"fields":["a",1]}`, "fields[1] must be a string, got a number"},
		{"facet size", `{"facets":{"f":{"field":"a","size":"x"}}}`, "facets.f.size must be an integer, got a string"},
		{"huge size", `{"size":1e400}`, "size must be an integer, got 1e400"},
		{"q", "{\"q\":\"col\xff\"}", "invalid UTF-8 in q at byte 9"},
		{"sort", "{\"sort\":[\"a\",\"pr\xffice\"]}", "invalid UTF-8 in sort[1] at byte 16"},
		{"fields", "{\"fields\":[\"n\xe9\"]}", "invalid UTF-8 in fields[0]"},
		{"facet name", "{\"facets\":{\"c\xff\":{\"field\":\"c\"}}}", "invalid UTF-8 in a field name in facets"},
		{"facet field", "{\"facets\":{\"c\":{\"field\":\"c\xff\"}}}", "invalid UTF-8 in facets.c.field"},
		{"query field name", "{\"query\":{\"match\":\"x\",\"field\":\"na\xffme\"}}", "invalid UTF-8 in query.field"},
		{"query key", "{\"query\":{\"ma\xfftch\":\"x\"}}", "invalid UTF-8 in a field name in query"},
		{"filter string", "{\"filter\":{\"term\":\"\xc0\xaf\",\"field\":\"a\"}}", "invalid UTF-8 in filter.term"},
		{"surrogate in q", `{"q":"\ud83d"}`, "lone UTF-16 surrogate) in q"},
		{"trailing", `{"q":"x"}x`, "data after the JSON value"},
		{"not an object", `"q"`, "expected an object, got a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r SearchRequest
			err := r.UnmarshalJSON([]byte(c.json)) // as broker.DecodeRequest does
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("%v is not a bad request", err)
			}
			for _, leak := range []string{"Go struct", "of type", "api.", "json:"} {
				if strings.Contains(err.Error(), leak) {
					t.Fatalf("%q shows an internal detail (%s)", err, leak)
				}
			}
		})
	}
}

// A request built in Go with invalid UTF-8 is refused, not sent with
// U+FFFD in its place.
func TestSearchRequestInvalidUTF8(t *testing.T) {
	cases := []struct {
		req  SearchRequest
		want string
	}{
		{SearchRequest{Q: "col\xff"}, "q is not valid UTF-8 (byte 3)"},
		{SearchRequest{Sort: []string{"a", "\xfe"}}, "sort[1] is not valid UTF-8"},
		{SearchRequest{Fields: []string{"n\xc3"}}, "fields[0] is not valid UTF-8"},
		{SearchRequest{Facets: map[string]FacetRequest{"f": {Field: "\xff"}}}, "facets.f.field is not valid UTF-8"},
		{SearchRequest{Query: json.RawMessage("{\"match\":\"\xff\"}")}, "query is not valid UTF-8 (byte 10)"},
	}
	for _, c := range cases {
		if _, err := json.Marshal(c.req); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("marshal %+v: %v, want %q", c.req, err, c.want)
		}
		if err := c.req.Validate(); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("validate %+v: %v, want %q", c.req, err, c.want)
		}
	}
	if err := (&QuerySettings{Fields: []FieldBoost{{Field: "na\xffme"}}}).Validate(); err == nil || !strings.Contains(err.Error(), "query.fields[0].field is not valid UTF-8") {
		t.Errorf("query settings: %v", err)
	}
}

func TestValidDocumentID(t *testing.T) {
	for id, want := range map[string]string{
		"a": "", "ünïcode/ℵ": "", strings.Repeat("x", 512): "",
		"": "must be 1-512 bytes, got 0", strings.Repeat("x", 513): "must be 1-512 bytes, got 513",
		"col\xff": `"col\xff" is not valid UTF-8 (byte 3)`,
	} {
		err := ValidDocumentID(id)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%.20q: %v, want %q", id, err, want)
		}
	}
}

// DecodeStrict: the checks and messages of the search request for every
// JSON a user sends.
func TestDecodeStrict(t *testing.T) {
	cases := []struct {
		json, want string
	}{
		{`{"fields":[{"field":"name","boost":2}],"operator":"and","limits":{"max_terms":10}}`, ""},
		{`{"Operator":"and"}`, `malformed query settings: unknown field "Operator" (field names are case-sensitive: did you mean "operator"?)`},
		{`{"operator":"and","operator":"or"}`, `malformed query settings: duplicate field "operator"`},
		{`{"limits":{"max_terms":"many"}}`, "malformed query settings: limits.max_terms must be an integer, got a string"},
		{`{"fuzziness":1,"fuzz":2}`, `unknown field "fuzz"; the fields are: fields, operator, fuzziness, phrase_boost, typos, prefix, limits`},
		{`{"phrase_boost":1e999}`, "malformed query settings: phrase_boost must be a number, got 1e999"},
		{"{\"fields\":[{\"field\":\"\xff\"}]}", "malformed query settings: invalid UTF-8 in fields[0].field at byte 21"},
	}
	for _, c := range cases {
		var qs QuerySettings
		err := DecodeStrict("query settings", []byte(c.json), &qs)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.json, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
}

// A query or filter as deep as any index allows decodes; one level more is
// refused as query_too_complex where the scan meets it, however deep the
// rest goes (the index's own max_depth, lower, is the planner's to check).
func TestSearchRequestDepth(t *testing.T) {
	nest := func(levels int) string { // a query that nests levels deep
		return strings.Repeat(`[`, levels-1) + `{"term":"x","field":"f"}` + strings.Repeat(`]`, levels-1)
	}
	for _, part := range []string{"query", "filter"} {
		var ok SearchRequest
		if err := ok.UnmarshalJSON([]byte(`{"` + part + `":` + nest(MaxLimits.MaxDepth) + `}`)); err != nil {
			t.Fatalf("%s %d deep: %v", part, MaxLimits.MaxDepth, err)
		}
		for _, levels := range []int{MaxLimits.MaxDepth + 1, 4900} {
			var r SearchRequest
			err := r.UnmarshalJSON([]byte(`{"` + part + `":` + nest(levels) + `}`))
			at := len(`{"`+part+`":`) + MaxLimits.MaxDepth // the 129th [
			want := fmt.Sprintf("the request nests deeper than 129 levels at byte %d; no index allows a query or filter deeper than 128 (query.limits.max_depth)", at)
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeQueryTooComplex || !strings.Contains(e.Message, want) {
				t.Errorf("%s %d deep: %v, want query_too_complex saying %q", part, levels, err, want)
			}
		}
	}
}

// A q longer than any index allows is refused before it is decoded: by
// its length when it has no escape, by the least it can decode to when it
// has; one any index might allow decodes (the index's own max_q_bytes is
// the planner's to check).
func TestSearchRequestQCeiling(t *testing.T) {
	max := MaxLimits.MaxQBytes
	for _, tc := range []struct {
		name, q string
		want    string // "" decodes
	}{
		{"as long as any index allows", strings.Repeat("a", max), ""},
		{"a byte longer", strings.Repeat("a", max+1), fmt.Sprintf("q's length in bytes is %d; no index allows more than %d (query.limits.max_q_bytes)", max+1, max)},
		{"escapes that decode short enough", strings.Repeat(`\u0041`, max), ""},
		{"escapes that cannot", strings.Repeat(`\u0041`, max+1), fmt.Sprintf("q's length in bytes is at least %d; no index allows more than %d", max+1, max)},
	} {
		var r SearchRequest
		err := r.UnmarshalJSON([]byte(`{"q":"` + tc.q + `"}`))
		if tc.want == "" {
			if err != nil || len(r.Q) != max {
				t.Errorf("%s: %v, q of %d bytes", tc.name, err, len(r.Q))
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeQueryTooComplex || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %v, want query_too_complex saying %q", tc.name, err, tc.want)
		}
	}
}
