package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/wire"
)

// BenchmarkDictionary measures a field's whole dictionary statistics on
// a shard of 5,000 catalogue items (the demo's mapping), one segment
// (merged) and as bulk-loaded batches of 100 leave it, against the
// statistics phase of a query reading every term (a prefix of ""), which
// opens a term reader and a searcher per term: side by side.
//
//	go test -run XXX -bench Dictionary -benchmem -count 5 ./internal/shard/
func BenchmarkDictionary(b *testing.B) {
	r := loadReplicas(b, 1, catalog.Mapping(), catalogueRecords(b, 5000))[0]
	ctx := context.Background()
	for _, merged := range []bool{false, true} {
		if merged {
			if err := r.ForceMerge(ctx); err != nil {
				b.Fatal(err)
			}
		}
		for _, field := range []string{"name", "_all"} {
			name := fmt.Sprintf("segments=%s/%s", map[bool]string{false: "batches", true: "one"}[merged], field)
			b.Run(name+"/dictionary", func(b *testing.B) {
				req := &wire.ShardRequest{Phase: wire.PhaseDictionary, DictionaryField: field}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := r.Dictionary(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/prefix-stats", func(b *testing.B) {
				req := &wire.ShardRequest{Phase: wire.PhaseStats, Query: []byte(fmt.Sprintf(`{"prefix":"","field":%q}`, field))}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := r.Stats(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// catalogueRecords are the first n items of the sample catalogue, as
// documents.
func catalogueRecords(tb testing.TB, n int) []map[string]any {
	tb.Helper()
	var buf bytes.Buffer
	if err := catalog.WriteNDJSON(&buf, catalog.Generate(catalog.DefaultSeed, n)); err != nil {
		tb.Fatal(err)
	}
	var docs []map[string]any
	for line := range bytes.Lines(buf.Bytes()) {
		var d map[string]any
		if err := json.Unmarshal(line, &d); err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, d)
	}
	return docs
}
