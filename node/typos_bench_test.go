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
// description, _all^0.5), the same queries with "typos" off and on,
// alternated request by request so both see the same machine. p50-µs
// and p99-µs are end to end at the client.
//
//	go test -run XXX -bench Typos -benchtime 2000x ./node/
func BenchmarkTypos(b *testing.B) {
	n := startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c, ctx := n.Client(), context.Background()
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "name", Boost: 3}, {Field: "description", Boost: 1}, {Field: "_all", Boost: 0.5}}}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "bench", Shards: 4, Mapping: catalog.Mapping(), Query: qs}); err != nil {
		b.Fatal(err)
	}
	mustBulk(b, c, "bench", bytes.NewBuffer(catalogNDJSON(b, 20000)))
	waitDocs(b, n, 20000)
	queries := []string{"spicy noodles", "chicken tikka masala", "vegetarian dumplings", "pad thai", "chiken curry", "mushroom risotto"}
	for _, typos := range []bool{false, true} { // warm both
		for _, q := range queries {
			if _, err := c.Search(ctx, "bench", &api.SearchRequest{Q: q, Typos: &typos}); err != nil {
				b.Fatal(err)
			}
		}
	}
	lat := map[bool][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		typos := i%2 == 1
		start := time.Now()
		if _, err := c.Search(ctx, "bench", &api.SearchRequest{Q: queries[(i/2)%len(queries)], Typos: &typos}); err != nil {
			b.Fatal(err)
		}
		lat[typos] = append(lat[typos], time.Since(start))
	}
	b.StopTimer()
	for _, typos := range []bool{false, true} {
		l := lat[typos]
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		name := "off"
		if typos {
			name = "on"
		}
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs-"+name)
		b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs-"+name)
	}
}
