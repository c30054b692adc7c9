package querystats

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/wire"
)

// TestExactPhrase: a match_phrase query, which a shard searches with
// Quarry's searchers when it allows no typos (exactPhrase), finds, scores
// and locates exactly what bleve's phrase searcher does: one word or
// several, with stop words between, the same word twice, in lists of
// values, in a long field of the phrase over and over, on its own and in
// every kind of compound query, on fields with and without term
// locations; where its searchers would not be the same (typos, a stop
// word alone, explanations) bleve's phrase searcher runs.
func TestExactPhrase(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(catalog.Generate(11, 400))
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	if err := json.Unmarshal(raw, &docs); err != nil {
		t.Fatal(err)
	}
	// Input the generator never makes: a word again and again, scripts,
	// an emoji, stop words alone, words in lists of values, a long field.
	long := strings.Repeat("lorem ipsum dolor ", 2200)
	docs = append(docs,
		map[string]any{"id": "odd1", "name": "chicken chicken chicken", "description": "chicken, and chicken again"},
		map[string]any{"id": "odd2", "name": "İstanbul köfte 🍢 麻辣烫", "description": "Cafe\u0301 crème brûlée ﬁnal"},
		map[string]any{"id": "odd3", "name": "the", "description": "the the the", "tags": []string{"spicy", "chicken", "spicy"}},
		map[string]any{"id": "odd4", "name": "Chicken", "cuisine": "Thai", "tags": []string{"vegan", "spicy"}},
		map[string]any{"id": "odd5", "name": "spicy chicken with rice", "description": []string{"spicy chicken", "chicken curry", "spicy", "curry spicy chicken"}},
		map[string]any{"id": "odd6", "name": "long lorem", "description": long + "chicken curry"},
		map[string]any{"id": "odd7", "name": "spicy chicken chicken spicy chicken", "description": []string{"lorem ipsum", "dolor lorem", "ipsum"}},
		// _all's locations are each field's own: "zzalpha" is at 1 in
		// name, "zzbeta" at 2 in restaurant.
		map[string]any{"id": "odd8", "name": "zzalpha", "restaurant": "the zzbeta"},
	)
	m, idx := scorchIndex(t, catalog.Mapping(), docs)

	word := func(text, field string, boost float64) string {
		return fmt.Sprintf(`{"match_phrase":%q,"field":%q,"boost":%g}`, text, field, boost)
	}
	for _, c := range []struct {
		name  string
		query string
		fast  bool // every phrase of it searched by Quarry's searchers
		none  bool // bleve finds nothing
	}{
		{"alone", word("chicken", "name", 1), true, false},
		{"boosted alone", word("Chicken", "description", 3.5), true, false},
		{"stemmed", word("noodles", "description", 1), true, false},
		{"a word and a stop word", word("the chicken", "name", 1), true, false},
		{"unicode", word("köfte", "name", 2), true, false},
		{"no such word", word("zzyzx", "name", 1), true, true},
		{"default field", `{"match_phrase":"spicy"}`, true, false},
		{"analyzer named", `{"match_phrase":"Chicken","field":"name","analyzer":"standard"}`, true, false},
		{"field without locations", word("Thai", "cuisine", 1), true, true},
		{"list without locations", word("spicy", "tags", 1), true, true},
		{"as the demo asks", `{"disjuncts":[{"match":"chicken","field":"name","boost":3},{"match_phrase":"chicken","field":"name","boost":6},{"match":"chicken","field":"description"},{"match_phrase":"chicken","field":"description","boost":2},{"match":"chicken","field":"_all","boost":0.5},{"match_phrase":"chicken","field":"_all","boost":1}]}`, true, false},
		{"conjunction", `{"conjuncts":[{"match_phrase":"chicken","field":"name"},{"match":"spicy","field":"_all"}]}`, true, false},
		{"boolean", `{"must":{"conjuncts":[{"match_phrase":"spicy","field":"_all"}]},"should":{"disjuncts":[{"match_phrase":"chicken","field":"name","boost":2}]},"must_not":{"disjuncts":[{"match_phrase":"vegan","field":"_all"}]}}`, true, false},
		{"two words", word("spicy chicken", "name", 1), true, false},
		{"two words boosted", word("chicken curry", "description", 2.5), true, false},
		{"the same word twice", word("chicken chicken", "name", 1), true, false},
		{"a word, twice", word("chicken spicy chicken", "name", 1), true, false},
		{"a stop word between", word("chicken with rice", "name", 1), true, false},
		{"stop words first and last", word("the spicy chicken with", "name", 1), true, false},
		{"in a list", word("spicy chicken", "description", 1), true, false},
		{"across a list's values", word("curry spicy", "description", 1), true, false},
		{"across a list's values only", word("ipsum dolor", "description", 1), true, false},
		{"over and over", word("lorem ipsum dolor lorem", "description", 1), true, false},
		{"not in that order", word("chicken spicy", "description", 1), true, true},
		{"across _all's fields", word("zzalpha zzbeta", "_all", 1), true, true},
		{"phrases in a disjunction", `{"disjuncts":[{"match":"spicy chicken","field":"name","boost":3},{"match_phrase":"spicy chicken","field":"name","boost":6},{"match":"spicy chicken","field":"_all","boost":0.5},{"match_phrase":"spicy chicken","field":"_all","boost":1}]}`, true, false},
		{"a stop word alone", word("the", "name", 1), false, true},
		{"typos", `{"match_phrase":"chiken","field":"name","fuzziness":1}`, false, false},
		{"typos auto", `{"match_phrase":"chiken","field":"name","fuzziness":"auto"}`, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := RequestQuery(&wire.ShardRequest{Query: json.RawMessage(c.query), K: 10})
			if err != nil {
				t.Fatal(err)
			}
			if n, fast := exactPhrasesIn(got, m); n == 0 || fast != c.fast {
				t.Fatalf("%d match_phrase queries made exactPhrase, all by Quarry's searchers %v, want %v", n, fast, c.fast)
			}
			want, err := query.ParseQuery(json.RawMessage(c.query))
			if err != nil {
				t.Fatal(err)
			}
			for _, explain := range []bool{false, true} {
				g, w := phraseHits(t, idx, got, explain), phraseHits(t, idx, want, explain)
				if (len(w.Hits) == 0) != c.none {
					t.Fatalf("bleve found %d documents", len(w.Hits))
				}
				if g.Total != w.Total || len(g.Hits) != len(w.Hits) {
					t.Fatalf("explain %v: %d hits (%d in all), bleve %d (%d)", explain, len(g.Hits), g.Total, len(w.Hits), w.Total)
				}
				for i, wh := range w.Hits {
					gh := g.Hits[i]
					if gh.ID != wh.ID || gh.Score != wh.Score {
						t.Fatalf("explain %v: hit %d is %s %v, bleve's %s %v", explain, i, gh.ID, gh.Score, wh.ID, wh.Score)
					}
					if !reflect.DeepEqual(gh.Locations, wh.Locations) {
						t.Fatalf("explain %v: hit %s's locations %v, bleve's %v", explain, gh.ID, gh.Locations, wh.Locations)
					}
					if explain && !reflect.DeepEqual(gh.Expl, wh.Expl) {
						t.Fatalf("hit %s's explanation differs from bleve's", gh.ID)
					}
				}
			}
		})
	}
}

// exactPhrasesIn counts the exactPhrase queries of q and says whether all
// of them take their term searcher.
func exactPhrasesIn(q query.Query, m mapping.IndexMapping) (n int, fast bool) {
	fast = true
	var walk func(q query.Query)
	walk = func(q query.Query) {
		switch q := q.(type) {
		case *exactPhrase:
			n++
			_, _, ok := q.terms(context.Background(), m, search.SearcherOptions{})
			fast = fast && ok
		case *query.DisjunctionQuery:
			for _, d := range q.Disjuncts {
				walk(d)
			}
		case *query.ConjunctionQuery:
			for _, c := range q.Conjuncts {
				walk(c)
			}
		case *query.BooleanQuery:
			walk(q.Must)
			walk(q.Should)
			walk(q.MustNot)
		}
	}
	walk(q)
	return n, fast
}

// phraseHits searches idx for q as bleve does, every hit with its
// locations (and explanation).
func phraseHits(t *testing.T, idx bleve.Index, q query.Query, explain bool) *bleve.SearchResult {
	t.Helper()
	req := bleve.NewSearchRequestOptions(q, 1000, 0, explain)
	req.IncludeLocations = true
	req.SortBy([]string{"-_score", "_id"})
	res, err := idx.SearchInContext(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// BenchmarkExactPhrase: one word and two as the demo index asks them (a
// match and a match_phrase on each of its three fields), and their
// phrase alone on _all, searched by bleve's phrase searcher and by
// exactPhrase, side by side on 5,000 catalogue items.
//
//	go test -run XXX -bench ExactPhrase -benchmem -count 3 ./internal/querystats/
func BenchmarkExactPhrase(b *testing.B) {
	raw, err := json.Marshal(catalog.Generate(catalog.DefaultSeed, 5000))
	if err != nil {
		b.Fatal(err)
	}
	var docs []map[string]any
	if err := json.Unmarshal(raw, &docs); err != nil {
		b.Fatal(err)
	}
	_, idx := scorchIndex(b, catalog.Mapping(), docs)
	demo := func(text string) string {
		return fmt.Sprintf(`{"disjuncts":[{"match":%[1]q,"field":"name","boost":3},{"match_phrase":%[1]q,"field":"name","boost":6},{"match":%[1]q,"field":"description"},{"match_phrase":%[1]q,"field":"description","boost":2},{"match":%[1]q,"field":"_all","boost":0.5},{"match_phrase":%[1]q,"field":"_all","boost":1}]}`, text)
	}
	for _, c := range []struct{ name, query string }{
		{"one-word/demo", demo("chicken")},
		{"one-word/phrase", `{"match_phrase":"chicken","field":"_all"}`},
		{"two-words/demo", demo("spicy chicken")},
		{"two-words/phrase", `{"match_phrase":"spicy chicken","field":"_all"}`},
	} {
		quarry, err := RequestQuery(&wire.ShardRequest{Query: json.RawMessage(c.query), K: 10})
		if err != nil {
			b.Fatal(err)
		}
		bleveQ, err := query.ParseQuery(json.RawMessage(c.query))
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []struct {
			name string
			q    query.Query
		}{{"bleve", bleveQ}, {"quarry", quarry}} {
			b.Run(c.name+"/"+q.name, func(b *testing.B) {
				b.ReportAllocs()
				req := bleve.NewSearchRequestOptions(q.q, 13, 0, false)
				for b.Loop() {
					res, err := idx.SearchInContext(context.Background(), req)
					if err != nil || res.Total == 0 {
						b.Fatal(err, res.Total)
					}
				}
			})
		}
	}
}

// FuzzExactPhrase: a phrase of words from a small vocabulary (stop words
// among them), on a field with locations, one in lists of values, one
// whose analyser keeps stop words, one without locations and _all, over
// documents made of the same words, finds, scores and locates what
// bleve's phrase searcher does.
//
//	go test -run XXX -fuzz FuzzExactPhrase -fuzztime 1m ./internal/querystats/
func FuzzExactPhrase(f *testing.F) {
	vocabulary := []string{"spicy", "chicken", "the", "with", "curry", "rice", "chickens", "of"}
	fields := []string{"name", "description", "restaurant", "cuisine", "_all"}
	r := rand.New(rand.NewPCG(3, 4))
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocabulary[r.IntN(len(vocabulary))]
		}
		return strings.Join(ws, " ")
	}
	docs := make([]map[string]any, 300)
	for i := range docs {
		values := make([]string, 1+r.IntN(3))
		for j := range values {
			values[j] = text(1 + r.IntN(6))
		}
		docs[i] = map[string]any{"id": fmt.Sprintf("d%03d", i), "name": text(1 + r.IntN(8)), "description": values, "restaurant": text(1 + r.IntN(4)), "cuisine": vocabulary[r.IntN(len(vocabulary))]}
	}
	_, idx := scorchIndex(f, catalog.Mapping(), docs)
	for _, seed := range [][]byte{{0, 0, 1}, {1, 0, 1, 4}, {1, 2, 0, 3, 1}, {2, 2, 1}, {4, 0, 1, 1}, {3, 4}, {1, 1, 1, 1}, {0, 7, 0}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		in = in[:min(len(in), 9)]
		ws := make([]string, len(in)-1)
		for i, c := range in[1:] {
			ws[i] = vocabulary[int(c)%len(vocabulary)]
		}
		raw := fmt.Sprintf(`{"match_phrase":%q,"field":%q}`, strings.Join(ws, " "), fields[int(in[0])%len(fields)])
		got, err := RequestQuery(&wire.ShardRequest{Query: json.RawMessage(raw), K: 10})
		if err != nil {
			t.Fatal(err)
		}
		want, err := query.ParseQuery(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		g, w := phraseHits(t, idx, got, false), phraseHits(t, idx, want, false)
		if g.Total != w.Total || len(g.Hits) != len(w.Hits) {
			t.Fatalf("%s: %d hits, bleve %d", raw, g.Total, w.Total)
		}
		for i, wh := range w.Hits {
			gh := g.Hits[i]
			if gh.ID != wh.ID || gh.Score != wh.Score || !reflect.DeepEqual(gh.Locations, wh.Locations) {
				t.Fatalf("%s: hit %d is %s %v %v, bleve's %s %v %v", raw, i, gh.ID, gh.Score, gh.Locations, wh.ID, wh.Score, wh.Locations)
			}
		}
	})
}
