package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
)

func loadMapping(t *testing.T) *mapping.IndexMappingImpl {
	t.Helper()
	m := mapping.NewIndexMapping()
	if err := json.Unmarshal(Mapping(), m); err != nil {
		t.Fatalf("unmarshal mapping: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("validate mapping: %v", err)
	}
	return m
}

func TestMappingValid(t *testing.T) {
	// Unknown keys are errors, not silently ignored.
	strict := mapping.MappingJSONStrict
	mapping.MappingJSONStrict = true
	defer func() { mapping.MappingJSONStrict = strict }()
	m := loadMapping(t)

	if m.ScoringModel != "bm25" {
		t.Errorf("scoring model %q, want bm25", m.ScoringModel)
	}
	if !m.IndexDynamic || !m.StoreDynamic || !m.DocValuesDynamic || m.DefaultAnalyzer != "standard" || !m.DefaultMapping.Dynamic {
		t.Errorf("dynamic settings or default analyzer wrong: %+v", m)
	}
	// Queries on _all (the default field) are analysed like name and description.
	if got := m.AnalyzerNameForPath("_all"); got != "en" {
		t.Errorf("_all analyzer %q, want en", got)
	}
	fields := []struct {
		path, typ, analyzer string
		inAll               bool
	}{
		{"name", "text", "en", true},
		{"description", "text", "en", true},
		{"restaurant", "text", "standard", true},
		{"restaurant_id", "text", "keyword", false},
		{"cuisine", "text", "keyword", true},
		{"tags", "text", "keyword", true},
		{"city", "text", "keyword", false},
		{"price", "number", "", false},
		{"rating", "number", "", false},
		{"rating_count", "number", "", false},
		{"open_hour", "number", "", false},
		{"close_hour", "number", "", false},
		{"location", "geopoint", "", false},
	}
	for _, f := range fields {
		fm := m.FieldMappingForPath(f.path)
		if fm.Type != f.typ || fm.Analyzer != f.analyzer || fm.IncludeInAll != f.inAll || !fm.Store || !fm.Index {
			t.Errorf("field %s: %+v, want type %s analyzer %q include_in_all %v, stored and indexed", f.path, fm, f.typ, f.analyzer, f.inAll)
		}
	}
	// Every Item field is mapped explicitly.
	var doc map[string]any
	b, _ := json.Marshal(Generate(1, 1)[0])
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for k := range doc {
		if _, ok := m.DefaultMapping.Properties[k]; !ok {
			t.Errorf("Item field %q has no explicit mapping", k)
		}
	}
}

// TestSearchRelevance builds a scorch index over the first 2,000 items of
// the default catalogue and checks that the demo queries, run as query
// strings on the default field, put relevant items on top.
func TestSearchRelevance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a bleve index")
	}
	m := loadMapping(t)
	idx, err := bleve.NewUsing(t.TempDir(), m, "scorch", "scorch", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()

	// Index the documents as the demo does: decoded from NDJSON.
	items := Generate(DefaultSeed, 2000)
	byID := make(map[string]Item, len(items))
	for _, it := range items {
		byID[it.ID] = it
	}
	var buf bytes.Buffer
	if err := WriteNDJSON(&buf, items); err != nil {
		t.Fatal(err)
	}
	batch := idx.NewBatch()
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var doc map[string]any
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if err := batch.Index(doc["id"].(string), doc); err != nil {
			t.Fatal(err)
		}
		if batch.Size() >= 500 {
			if err := idx.Batch(batch); err != nil {
				t.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := idx.Batch(batch); err != nil {
		t.Fatal(err)
	}
	if n, _ := idx.DocCount(); n != uint64(len(items)) {
		t.Fatalf("indexed %d documents, want %d", n, len(items))
	}

	text := func(it Item) string { return strings.ToLower(it.Name + " " + it.Description) }
	pasta := regexp.MustCompile(`spaghetti|penne|linguine|fettuccine|macaroni|pasta`)
	tests := []struct {
		query    string
		top      int             // hits that must be relevant, for the demo query
		rel      func(Item) bool // relevance of a hit
		best     func(Item) bool // stricter relevance for the top 3 (optional)
		plainTop int             // hits that must be relevant for a plain query string on _all (0: not checked)
	}{
		{
			query: "spicy noodles", top: 10, plainTop: 5,
			rel:  func(it Item) bool { return strings.Contains(text(it), "noodle") },
			best: func(it Item) bool { return strings.Contains(text(it), "noodle") && has(it.Tags, "spicy") },
		},
		{
			query: "pad thai", top: 5,
			rel: func(it Item) bool { return strings.Contains(it.Name, "Pad Thai") },
		},
		{
			query: "vegan burger", top: 3, plainTop: 1,
			rel: func(it Item) bool { return strings.Contains(it.Name, "Burger") && has(it.Tags, "vegan") },
		},
		{
			query: "margherita pizza", top: 5, plainTop: 5,
			rel: func(it Item) bool { return strings.Contains(it.Name, "Margherita Pizza") },
		},
		{
			query: "sushi", top: 10,
			rel: func(it Item) bool { return strings.Contains(text(it), "sushi") },
		},
		{
			query: "gluten free pasta", top: 3,
			rel: func(it Item) bool { return has(it.Tags, "gluten-free") && pasta.MatchString(text(it)) },
		},
		{
			query: "butter chicken", top: 5,
			rel: func(it Item) bool { return strings.Contains(it.Name, "Butter Chicken") },
		},
	}
	count := func(f func(Item) bool) int {
		n := 0
		for _, it := range items {
			if f(it) {
				n++
			}
		}
		return n
	}
	for _, tc := range tests {
		type named struct {
			kind string
			q    query.Query
			top  int
		}
		queries := []named{{"demo query", demoQuery(tc.query), tc.top}}
		if tc.plainTop > 0 {
			queries = append(queries, named{"query string", bleve.NewQueryStringQuery(tc.query), tc.plainTop})
		}
		nRel := count(tc.rel)
		nBest := nRel
		if tc.best != nil {
			nBest = count(tc.best)
		}
		if nRel == 0 || nBest == 0 {
			t.Errorf("%q: no relevant item among the %d indexed", tc.query, len(items))
			continue
		}
		for _, q := range queries {
			top := min(q.top, nRel)
			req := bleve.NewSearchRequestOptions(q.q, top, 0, false)
			res, err := idx.Search(req)
			if err != nil {
				t.Fatalf("%s %q: %v", q.kind, tc.query, err)
			}
			if len(res.Hits) < top {
				t.Errorf("%s %q: %d hits, want at least %d", q.kind, tc.query, len(res.Hits), top)
			}
			for i, h := range res.Hits {
				it := byID[h.ID]
				if i < 3 {
					t.Logf("%s %q #%d %.3f %s: %s (%s) %v", q.kind, tc.query, i+1, h.Score, h.ID, it.Name, it.Restaurant, it.Tags)
				}
				if !tc.rel(it) || (tc.best != nil && i < min(3, nBest) && !tc.best(it)) {
					t.Errorf("%s %q: hit #%d %s is not relevant: %s / %s %v", q.kind, tc.query, i+1, h.ID, it.Name, it.Description, it.Tags)
				}
			}
		}
	}
}

// demoQuery is the query the README recommends for a search box: the words
// as a phrase in the name (strongest), any of them in the name, any of them
// in the description, all of them anywhere in _all (name, description,
// restaurant, cuisine, tags), and any of them in _all (weakest).
func demoQuery(q string) query.Query {
	phrase := bleve.NewMatchPhraseQuery(q)
	phrase.SetField("name")
	phrase.SetBoost(3)
	name := bleve.NewMatchQuery(q)
	name.SetField("name")
	desc := bleve.NewMatchQuery(q)
	desc.SetField("description")
	allWords := bleve.NewMatchQuery(q)
	allWords.SetField("_all")
	allWords.SetOperator(query.MatchQueryOperatorAnd)
	allWords.SetBoost(2)
	anyWord := bleve.NewMatchQuery(q)
	anyWord.SetField("_all")
	anyWord.SetBoost(0.5)
	return bleve.NewDisjunctionQuery(phrase, name, desc, allWords, anyWord)
}
