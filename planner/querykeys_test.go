package planner

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
)

// TestQueryKeys: a key bleve would ignore is refused, naming the query
// kind, the key and the keys it has, at any depth; every kind of query
// with only its own keys goes through.
func TestQueryKeys(t *testing.T) {
	p := testPlanner(t)
	def := api.IndexDefinition{Name: "x", Shards: 1}
	refused := []struct{ query, want string }{
		{`{"match":"pizza","feild":"name"}`, `a match query has no key "feild" (it has analyzer, boost, field, fuzziness, match, operator, prefix_length)`},
		{`{"match_phrase":"pad thai","fields":"name"}`, `a match phrase query has no key "fields"`},
		{`{"term":"x","field":"a","fuzzy":1}`, `a term query has no key "fuzzy"`},
		{`{"conjuncts":[{"match":"a"},{"match":"b","Field":"name"}]}`, `a match query has no key "Field"`},
		{`{"must":{"conjuncts":[{"term":"x","feild":"f"}]}}`, `a term query has no key "feild"`},
		{`{"should":{"disjuncts":[{"match":"a"}],"minimum":1}}`, `a disjunction query has no key "minimum"`},
		{`{"min":1,"max":5,"field":"price","inclusive":true}`, `a numeric range query has no key "inclusive"`},
		{`{"match_all":{},"boost":1,"field":"x"}`, `a match all query has no key "field"`},
		{`{"query":"pizza","default_field":"name"}`, `a query string query has no key "default_field"`},
		// {"fuzzy": …} is no bleve query: its fuzziness made it a fuzzy
		// query of the empty term, the key dropped.
		{`{"fuzzy":"piza","field":"name","fuzziness":1}`, `a fuzzy query has no key "fuzzy"`},
		// Read as JSON, not as text: spaces, escapes, and a key given
		// twice (bleve parses the last).
		{` { "conjuncts" : [ {"match":"a"} , {"term":"b", "x":[1,{"y":"}\"]"}]} ] } `, `a term query has no key "x"`},
		{`{"m\u0061tch":"a","f\u00e9ld":"x"}`, `a match query has no key "féld"`},
		{`{"must":{"conjuncts":[{"match":"a"}]},"must":{"conjuncts":[{"match":"a","x":1}]}}`, `a match query has no key "x"`},
		// An empty key is no kind's (it was taken for the kinds' empty
		// "extra" key once).
		{`{"match":"x","":1}`, `a match query has no key ""`},
	}
	for _, c := range refused {
		_, err := p.Plan(&api.SearchRequest{Query: json.RawMessage(c.query)}, def, nil)
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a bad request naming %q", c.query, err, c.want)
		}
	}
	accepted := []string{
		`{"match":"pizza","field":"name","fuzziness":1,"prefix_length":1,"operator":"and","boost":2,"analyzer":"standard"}`,
		`{"match_phrase":"pad thai","field":"name","boost":1}`,
		`{"term":"pizza","field":"name"}`,
		`{"terms":["pad","thai"],"field":"name"}`,
		`{"prefix":"piz","field":"name"}`,
		`{"wildcard":"pi*a","field":"name"}`,
		`{"regexp":"pi.*","field":"name"}`,
		`{"term":"piza","field":"name","fuzziness":1}`,
		`{"min":1,"max":5,"inclusive_min":true,"inclusive_max":false,"field":"price"}`,
		`{"start":"2020-01-01T00:00:00Z","end":"2021-01-01T00:00:00Z","inclusive_start":true,"field":"date"}`,
		`{"bool":true,"field":"vegan"}`,
		`{"ids":["a","b"]}`,
		`{"match_all":{}}`,
		`{"match_none":{}}`,
		`{"query":"+pizza -pineapple"}`,
		`{"conjuncts":[{"match":"a"},{"disjuncts":[{"term":"b","field":"name"}],"min":1}]}`,
		`{"must":{"conjuncts":[{"match":"a"}]},"should":{"disjuncts":[{"match":"b"}],"min":0},"must_not":{"disjuncts":[{"match":"c"}]},"boost":1}`,
		`{"location":{"lat":52.5,"lon":13.4},"distance":"3km","field":"location"}`,
		`{"top_left":[13,53],"bottom_right":[14,52],"field":"location"}`,
		`{"m\u0061tch":"a","fi\u0065ld":"name"}`,
		`{"must":{"conjuncts":[{"match":"a","x":1}]},"must":{"conjuncts":[{"match":"a"}]}}`,
	}
	for _, q := range accepted {
		if _, err := p.Plan(&api.SearchRequest{Query: json.RawMessage(q)}, def, nil); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

// benchQuery is a search's query as a client might send it: a boolean
// query of a few match and term clauses and a range filter.
var benchQuery = json.RawMessage(`{
	"must": {"conjuncts": [
		{"match": "pad thai", "field": "name", "operator": "and"},
		{"term": "vegan", "field": "tags"}
	]},
	"should": {"disjuncts": [
		{"match_phrase": "pad thai", "field": "name", "boost": 2},
		{"match": "noodles", "field": "description", "fuzziness": 1}
	]},
	"must_not": {"disjuncts": [{"term": "peanut", "field": "allergens"}]},
	"filter": {"min": 5, "max": 20, "inclusive_min": true, "field": "price"}
}`)

// BenchmarkCheckKeys: checkKeys alone, on benchQuery as bleve parsed it.
func BenchmarkCheckKeys(b *testing.B) {
	q, err := query.ParseQuery(benchQuery)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := checkKeys(benchQuery, q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlan: a search request with benchQuery planned, parsing and
// checking included.
func BenchmarkPlan(b *testing.B) {
	p, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	def := api.IndexDefinition{Name: "x", Shards: 3}
	req := &api.SearchRequest{Query: benchQuery, Size: 10}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Plan(req, def, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// checkKeysByMaps is checkKeys as it was written first, decoding every
// level with encoding/json: the reference FuzzCheckKeys holds the
// in-place reader to. It reports only whether a key is refused.
func checkKeysByMaps(raw json.RawMessage, q query.Query) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || q == nil {
		return false
	}
	v := reflect.ValueOf(q)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	v = v.Elem()
	fields := queryFields(v.Type())
	for key, sub := range obj {
		f, ok := fields.byKey[key]
		if !ok {
			if key != "" && fields.extra == key {
				continue
			}
			return true
		}
		if f < 0 {
			continue
		}
		fv := v.Field(fields.subs[f])
		switch {
		case fv.Type() == queryType:
			if !fv.IsNil() && checkKeysByMaps(sub, fv.Interface().(query.Query)) {
				return true
			}
		case fv.Kind() == reflect.Slice:
			var list []json.RawMessage
			if json.Unmarshal(sub, &list) != nil || len(list) != fv.Len() {
				continue
			}
			for i, s := range list {
				if q, _ := fv.Index(i).Interface().(query.Query); checkKeysByMaps(s, q) {
					return true
				}
			}
		}
	}
	return false
}

// FuzzCheckKeys: the in-place reader refuses exactly the queries the
// reference, which decodes every level, refuses.
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{
		`{"match":"pizza","field":"name"}`,
		`{"match":"pizza","feild":"name"}`,
		`{"bool":{"must":{"conjuncts":[{"term":"a","field":"x"},{"match_all":{}}]},"should":{"disjuncts":[{"prefix":"p","boost":2}]}}}`,
		`{"conjuncts":[{"match":"a","\u0066ield":"n"},{"match_phrase":"b c","slop":1}]}`,
		`{"match":"x","":1}`,
		`{"match_all":{},"match_all":{}}`,
		`{"query":"name:pizza"}`,
		`{"disjuncts":[{"term":"a"},{"term":"b","x":1}],"min":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		q, err := query.ParseQuery(raw)
		if err != nil {
			return
		}
		got := checkKeys(raw, q) != nil
		if want := checkKeysByMaps(raw, q); got != want {
			t.Fatalf("%s: refused %v, the reference refused %v", raw, got, want)
		}
	})
}
