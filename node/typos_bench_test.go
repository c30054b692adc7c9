package node

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/searcher"
)

// BenchmarkTypos measures typo tolerance's cost: the demo's 20,000
// documents in 4 shards with the demo's query settings (name^3,
// description, _all^0.5), the same queries with typos off (a request's
// false), "auto" (the default: typos for the words the index does not
// hold as typed) and "all" (every word: a second index of the same
// documents), alternated request by request so all three see the same
// machine. One query of six has a word the index lacks (chiken). p50-µs
// and p99-µs are end to end at the client.
//
//	go test -run XXX -bench Typos -benchtime 3000x ./node/
func BenchmarkTypos(b *testing.B) {
	n := startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c, ctx := n.Client(), context.Background()
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "name", Boost: 3}, {Field: "description", Boost: 1}, {Field: "_all", Boost: 0.5}}}
	all := qs
	all.Typos = api.TyposAll
	docs := catalogNDJSON(b, 20000)
	for name, settings := range map[string]api.QuerySettings{"bench": qs, "benchall": all} {
		if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: name, Shards: 4, Mapping: catalog.Mapping(), Query: settings}); err != nil {
			b.Fatal(err)
		}
		mustBulk(b, c, name, bytes.NewBuffer(docs))
	}
	waitDocs(b, n, 40000)
	queries := []string{"spicy noodles", "chicken tikka masala", "vegetarian dumplings", "pad thai", "chiken curry", "mushroom risotto"}
	modes := []struct {
		name, index string
		typos       *bool
	}{{"off", "bench", new(false)}, {"auto", "bench", nil}, {"all", "benchall", nil}}
	search := func(i int) (string, time.Duration) {
		m := modes[i%len(modes)]
		start := time.Now()
		if _, err := c.Search(ctx, m.index, &api.SearchRequest{Q: queries[(i/len(modes))%len(queries)], Typos: m.typos}); err != nil {
			b.Fatal(err)
		}
		return m.name, time.Since(start)
	}
	for i := range 3 * len(modes) * len(queries) { // warm every mode and query
		search(i)
	}
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		name, took := search(i)
		lat[name] = append(lat[name], took)
	}
	b.StopTimer()
	for _, m := range modes {
		l := lat[m.name]
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs-"+m.name)
		b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs-"+m.name)
	}
}
