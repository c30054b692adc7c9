package querystats

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/wire"
)

// ListTerms lists, from the mapping alone, exactly the terms and fields
// Count records over an index holding documents (a plain scorch index
// here; internal/shard's TestListTerms checks against its replicas), for
// every query whose terms do not depend on an index's dictionary, and
// lists nothing for a query whose terms do, whose terms are not UTF-8,
// or that is refused.
func TestListTermsAsCounted(t *testing.T) {
	t.Parallel()
	g := corpus.New(corpus.Config{Seed: 5, BodyMax: 40})
	docs := g.Records(200)
	m, idx := scorchIndex(t, corpus.Mapping("bm25"), docs)
	adv, err := idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	w := g.Words()
	text := w[3] + " " + w[44] + " Ünïcode ＦＵＬＬ"
	for _, tc := range []struct {
		name   string
		query  string
		k      int
		listed bool
	}{
		{"match", fmt.Sprintf(`{"match":"%s %s","field":"body"}`, w[3], w[120]), 10, true},
		{"term", fmt.Sprintf(`{"term":%q,"field":"title"}`, w[10]), 10, true},
		{"phrase", fmt.Sprintf(`{"match_phrase":"%s %s","field":"body"}`, w[0], w[1]), 10, true},
		{"several fields", fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"title","boost":3},{"match":%q,"field":"body"},{"match":%q,"field":"_all","boost":0.5},{"match_phrase":%q,"field":"title","boost":2}]}`, text, text, text, text), 10, true},
		{"boolean", fmt.Sprintf(`{"must":{"conjuncts":[{"match":%q,"field":"title"}]},"should":{"disjuncts":[{"match":%q,"field":"body"}]},"must_not":{"disjuncts":[{"term":%q,"field":"body"}]}}`, w[5], w[30], w[2]), 10, true},
		{"query string terms", fmt.Sprintf(`{"query":"+title:%s %s -body:%s"}`, w[4], w[61], w[2]), 10, true},
		{"filtered by a term", fmt.Sprintf(`{"must":{"conjuncts":[{"match":%q,"field":"body"}]},"filter":{"term":%q,"field":"title"}}`, w[8], w[9]), 10, true},
		{"match all", `{"match_all":{}}`, 10, true},
		{"no such word", `{"match":"zzqxv nosuchword","field":"body"}`, 0, true},
		{"prefix", fmt.Sprintf(`{"prefix":%q,"field":"body"}`, w[30][:2]), 10, false},
		{"fuzzy", fmt.Sprintf(`{"match":%q,"fuzziness":1,"field":"title"}`, w[40]), 10, false},
		{"wildcard", fmt.Sprintf(`{"wildcard":"%s*","field":"title"}`, w[40][:2]), 10, false},
		{"regexp", fmt.Sprintf(`{"regexp":"%s[a-z]{2,5}","field":"body"}`, w[60][:2]), 10, false},
		{"numeric range", fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"body"},{"min":1950,"max":1960,"field":"year"}]}`, w[20]), 10, false},
		{"geo distance", `{"location":{"lat":10,"lon":20},"distance":"700km","field":"loc"}`, 10, false},
		{"not UTF-8 once analysed", `{"match":"İstanbul","field":"body"}`, 10, false},
		{"bad query", `{"no_such_query":1}`, 10, false},
		{"k out of bounds", `{"match_all":{}}`, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &wire.ShardRequest{Query: []byte(tc.query), K: tc.k}
			qt, ok := ListTerms(context.Background(), req, m, nil)
			if ok != tc.listed {
				t.Fatalf("listed %v, want %v", ok, tc.listed)
			}
			if !ok {
				return
			}
			q, err := RequestQuery(req)
			if err != nil {
				t.Fatal(err)
			}
			reader, err := adv.Reader()
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			st, err := Count(context.Background(), q, 0, reader, m, 0)
			if err != nil {
				t.Fatal(err)
			}
			if st.DocCount != uint64(len(docs)) {
				t.Errorf("document count %d, want %d", st.DocCount, len(docs))
			}
			want := map[string][]string{}
			for f, ts := range st.DocFreq {
				want[f] = slices.Sorted(maps.Keys(ts))
			}
			got := map[string][]string{}
			for f, ts := range qt.Terms {
				got[f] = slices.Sorted(slices.Values(ts))
			}
			if !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("terms %v, Count read %v", got, want)
			}
			if fields := slices.Sorted(maps.Keys(st.FieldTokens)); !slices.Equal(qt.Fields, fields) {
				t.Errorf("fields %v, Count counted %v", qt.Fields, fields)
			}
		})
	}
}

// BenchmarkListTerms is what listing a new query's terms costs the broker
// (once per query not cached): a query of the demo's shape, three fields
// and a phrase, two words.
func BenchmarkListTerms(b *testing.B) {
	m, err := indexmap.Build(corpus.Mapping("bm25"))
	if err != nil {
		b.Fatal(err)
	}
	const text = "spicy noodles"
	q := fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"title","boost":3},{"match":%q,"field":"body"},{"match":%q,"field":"_all","boost":0.5},{"match_phrase":%q,"field":"title","boost":2}]}`, text, text, text, text)
	req := &wire.ShardRequest{Query: []byte(q), K: 10}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ListTerms(context.Background(), req, m, nil); !ok {
			b.Fatal("not listed")
		}
	}
}

// scorchIndex is corpus.ReferenceIndex, closed when tb ends.
func scorchIndex(tb testing.TB, raw json.RawMessage, docs []map[string]any) (*mapping.IndexMappingImpl, bleve.Index) {
	tb.Helper()
	m, idx, err := corpus.ReferenceIndex(tb.TempDir()+"/i", raw, docs)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { idx.Close() })
	return m, idx
}
