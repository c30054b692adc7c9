package node

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/searcher"
)

// BenchmarkLocalShards measures a search end to end at the client, one
// at a time (an idle node: what the hops cost, not the CPU), with the
// broker asking its node's searcher directly (broker.UseLocal) and
// through the NATS server (ShardsOverNATS), on two nodes side by side:
// the demo's 20,000 items in 4 shards, the modes asked in turn request
// by request. p50-µs and p99-µs per mode.
//
//	go test -run XXX -bench LocalShards -benchtime 4000x ./node/
func BenchmarkLocalShards(b *testing.B) {
	docs := catalogNDJSON(b, 20000)
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "name", Boost: 3}, {Field: "description", Boost: 1}, {Field: "_all", Boost: 0.5}}}
	modes := []struct {
		name string
		c    *client.Client
	}{{name: "direct"}, {name: "over-nats"}}
	for i := range modes {
		n := startConfig(b, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}, ShardsOverNATS: i == 1})
		c := n.Client()
		if _, err := c.CreateIndexDef(context.Background(), api.IndexDefinition{Name: "bench", Shards: 4, Mapping: catalog.Mapping(), Query: qs}); err != nil {
			b.Fatal(err)
		}
		mustBulk(b, c, "bench", bytes.NewBuffer(docs))
		waitDocs(b, n, 20000)
		modes[i].c = c
	}
	queries := []string{"spicy noodles", "chicken tikka masala", "pad thai", "mushroom risotto", "lamb", "beef burger"}
	search := func(i int) time.Duration {
		m := modes[i%2]
		start := time.Now()
		if _, err := m.c.Search(context.Background(), "bench", &api.SearchRequest{Q: queries[(i/2)%len(queries)], Fields: []string{"name", "price"}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for i := range 4 * len(queries) { // warm both
		search(i)
	}
	lat := make([][]time.Duration, len(modes))
	b.ResetTimer()
	for i := range b.N {
		lat[i%2] = append(lat[i%2], search(i))
		time.Sleep(time.Millisecond) // requests one at a time, not back to back
	}
	b.StopTimer()
	for i, m := range modes {
		l := lat[i]
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs-"+m.name)
		b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs-"+m.name)
	}
}
