package shard

import (
	"context"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/querystats"
)

// BenchmarkTokenCount measures the token count of one field: "cold" walks
// the postings of one merged segment of 20,000 documents (what the first
// query to read a field pays after a merge), "cached" is every later
// query's sum over the index's segments.
//
//	go test -run XXX -bench TokenCount -benchmem ./internal/shard/
func BenchmarkTokenCount(b *testing.B) {
	g := corpus.New(corpus.Config{Seed: 21, BodyMax: 90})
	docs := g.Records(20000)
	reps := loadReplicas(b, 1, corpus.Mapping("bm25"), docs)
	r := reps[0]
	if err := r.ForceMerge(context.Background()); err != nil {
		b.Fatal(err)
	}
	adv, _ := r.idx.Advanced()
	reader, err := adv.Reader()
	if err != nil {
		b.Fatal(err)
	}
	defer reader.Close()
	snap := reader.(*querystats.Reader).IndexReader.(*scorch.IndexSnapshot)
	b.Logf("%d segments", len(snap.Segments()))
	for _, field := range []string{"title", "body", "_all"} {
		b.Run("cold/"+field, func(b *testing.B) {
			seg := snap.Segments()[0].Segment()
			for b.Loop() {
				if _, err := countTokens(context.Background(), seg, field); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("cached/"+field, func(b *testing.B) {
			c := newTokenCache()
			for b.Loop() {
				if _, err := c.liveTokens(snap, field); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
