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
// machine. Two queries of six have a word the index lacks (chiken, and
// vegetarian: the catalogue says vegan): their figures are apart
// (-unknown). p50-µs and p99-µs are end to end at the client.
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
	// Each round of three asks the modes in an order of its own: the
	// request after an "all" one pays for some of its garbage, so a
	// fixed order would tilt the figures.
	orders := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	search := func(i int) (string, time.Duration) {
		round := i / len(modes)
		m := modes[orders[round%len(orders)][i%len(modes)]]
		q := queries[(round/len(orders))%len(queries)]
		start := time.Now()
		if _, err := c.Search(ctx, m.index, &api.SearchRequest{Q: q, Typos: m.typos}); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if q == "chiken curry" || q == "vegetarian dumplings" {
			return m.name + "-unknown", took
		}
		return m.name, took
	}
	for i := range len(modes) * len(orders) * len(queries) { // warm every mode and query
		search(i)
	}
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		name, took := search(i)
		lat[name] = append(lat[name], took)
	}
	b.StopTimer()
	// The four queries whose words the index holds, and the two with a
	// word it lacks, apart: auto's cost is the second's.
	for _, m := range modes {
		for _, name := range []string{m.name, m.name + "-unknown"} {
			l := lat[name]
			if len(l) == 0 {
				continue
			}
			slices.Sort(l)
			b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs-"+name)
			b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs-"+name)
		}
	}
}
