package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/searcher"
)

// BenchmarkExactScoring measures exact scoring's cost on 20,000 documents
// of the generated corpus in 4 shards, one query at a time, over six
// query kinds: "cached" with the broker's statistics cache (no extra
// round trip), "miss" with none (a statistics round trip on every
// request). p50/p99-µs are end to end at the client, stats-p50-µs the
// statistics phase's time from the request's profile.
//
//	go test -run XXX -bench ExactScoring -benchtime 2000x ./node/
func BenchmarkExactScoring(b *testing.B) {
	g := corpus.New(corpus.Config{Seed: 21, BodyMax: 90})
	var buf bytes.Buffer
	for range 20000 {
		d, _ := json.Marshal(g.Next().Record())
		buf.Write(append(d, '\n'))
	}
	w := g.Words()
	queries := []json.RawMessage{
		json.RawMessage(fmt.Sprintf(`{"match":"%s %s","field":"body"}`, w[3], w[120])),
		json.RawMessage(fmt.Sprintf(`{"match":"%s %s","field":"_all"}`, w[30], w[400])),
		json.RawMessage(fmt.Sprintf(`{"match_phrase":"%s %s","field":"body"}`, w[0], w[1])),
		json.RawMessage(fmt.Sprintf(`{"match":%q,"fuzziness":1,"field":"title"}`, w[500])),
		json.RawMessage(fmt.Sprintf(`{"prefix":%q,"field":"body"}`, w[300][:3])),
		json.RawMessage(fmt.Sprintf(`{"wildcard":"%s*%s","field":"title"}`, w[70][:2], w[70][len(w[70])-1:])),
	}
	for _, bc := range []struct {
		name string
		cfg  broker.Config
	}{{"cached", broker.Config{}}, {"miss", broker.Config{StatsCacheSize: -1}}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.cfg
			n := startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &cfg)
			c, ctx := n.Client(), context.Background()
			if _, err := c.CreateIndex(ctx, "bench", 4, corpus.Mapping("bm25")); err != nil {
				b.Fatal(err)
			}
			mustBulk(b, c, "bench", bytes.NewBuffer(buf.Bytes()))
			waitDocs(b, n, 20000)
			for range 3 { // warm: searchers, and the cache when there is one
				for _, q := range queries {
					if _, err := c.Search(ctx, "bench", &api.SearchRequest{Query: q}); err != nil {
						b.Fatal(err)
					}
				}
			}
			var lat, stats []time.Duration
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				r, err := c.Search(ctx, "bench", &api.SearchRequest{Query: queries[i%len(queries)], Profile: true})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				for _, st := range r.Profile.Stages {
					if st.Name == "stats" {
						stats = append(stats, time.Duration(math.Round(st.TookMS*1e6)))
					}
				}
				i++
			}
			slices.Sort(stats)
			if len(stats) > 0 {
				b.ReportMetric(float64(stats[len(stats)/2].Microseconds()), "stats-p50-µs")
			}
			reportPercentiles(b, lat)
		})
	}
}
