package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/wire"
)

// BenchmarkPointInTime measures what a point in time costs on a shard of
// 5,000 corpus documents: "open-close" opens one (the snapshot held,
// opened as a bleve index) and ends it; "search/now" and "search/pit" are
// the same sorted page read from the index now and from a point in time
// (the cost of reading a held snapshot, side by side).
//
//	go test -run XXX -bench PointInTime -benchmem -count 5 ./internal/shard/
func BenchmarkPointInTime(b *testing.B) {
	g := corpus.New(corpus.Config{Seed: 21, BodyMax: 90})
	r := loadReplicas(b, 1, corpus.Mapping("bm25"), g.Records(5000))[0]
	ctx := context.Background()
	if err := r.ForceMerge(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("open-close", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			id, _, err := r.OpenPIT("", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			r.ClosePIT(id)
		}
	})
	id, _, err := r.OpenPIT("", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	defer r.ClosePIT(id)
	w := g.Words()
	q := json.RawMessage(fmt.Sprintf(`{"match":"%s %s","field":"body"}`, w[3], w[120]))
	for _, pit := range []string{"", id} {
		name := "search/now"
		if pit != "" {
			name = "search/pit"
		}
		b.Run(name, func(b *testing.B) {
			req := &wire.ShardRequest{Query: q, K: 100, Sort: []string{"-_score", "_id"}, PIT: pit, PITKeepAliveMS: 60_000}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Search(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
