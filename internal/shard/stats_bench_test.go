package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/wire"
)

// BenchmarkStatsPhase is a shard's part of exact scoring on 5,000
// documents of the generated corpus (one segment), by query kind: "stats" is the
// statistics phase (Replica.Stats: the query's searchers built over the
// recording reader, the fields' token totals, cached), "search" the
// search with the index's statistics (the scoped reader; for fuzzy and
// prefix, the dictionary listed from the statistics).
//
//	go test -run XXX -bench StatsPhase -benchmem ./internal/shard/
func BenchmarkStatsPhase(b *testing.B) {
	g := corpus.New(corpus.Config{Seed: 21, BodyMax: 90})
	docs := g.Records(5000)
	r := loadReplicas(b, 1, corpus.Mapping("bm25"), docs)[0]
	ctx := context.Background()
	if err := r.ForceMerge(ctx); err != nil { // no merges in the background
		b.Fatal(err)
	}
	w := g.Words()
	for _, q := range []struct{ name, query string }{
		{"match", fmt.Sprintf(`{"match":"%s %s","field":"body"}`, w[3], w[120])},
		{"fields", fmt.Sprintf(`{"disjuncts":[{"match":"%s %s","field":"title","boost":3},{"match":"%s %s","field":"body"},{"match_phrase":"%s %s","field":"body"}]}`, w[40], w[140], w[40], w[140], w[0], w[1])},
		{"fuzzy", fmt.Sprintf(`{"match":%q,"fuzziness":1,"field":"title"}`, w[500])},
		{"prefix", fmt.Sprintf(`{"prefix":%q,"field":"body"}`, w[300][:3])},
	} {
		req := &wire.ShardRequest{Query: json.RawMessage(q.query), K: 10}
		gs, err := r.Stats(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("stats/"+q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Stats(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("search/"+q.name, func(b *testing.B) {
			sreq := *req
			sreq.Stats = gs
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Search(ctx, &sreq); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
