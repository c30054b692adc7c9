package api

import (
	"encoding/json"
	"errors"
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
		{`{"id":7}`, "", `"id" must be a string, got 7`},
		{`{"id":""}`, "", "must not be empty"},
		{`{"id":"a"`, "", "malformed JSON"},
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
		{`{"q":"x","bogus":1}`, 0, 0, "unknown field"},
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
