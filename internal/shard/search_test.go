package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/wire"
)

// Ties straddling the cut are broken by id, exactly as a sort by
// ["-_score", "_id"] would, whatever the tie group's size.
func TestTopKByScoreThenID(t *testing.T) {
	m, err := indexmap.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := bleve.NewUsing(t.TempDir()+"/i", m, IndexType, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	b := idx.NewBatch()
	// 200 identical documents (one big tie), inserted in an order unrelated
	// to their ids, and two that score higher.
	for i := range 200 {
		id := fmt.Sprintf("d%03d", (i*37)%200)
		b.Index(id, map[string]any{"text": "noodles soup"})
	}
	b.Index("top1", map[string]any{"text": "noodles"})
	b.Index("top2", map[string]any{"text": "noodles noodles"})
	if err := idx.Batch(b); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 2, 3, 5, 50, 199, 202, 300} {
		req := &wire.ShardRequest{Query: json.RawMessage(`{"match":"noodles","field":"text"}`), K: k, Fields: []string{"text"}}
		sreq, err := BuildRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := topKByScoreThenID(context.Background(), idx, sreq, k)
		if err != nil {
			t.Fatal(err)
		}
		want, err := idx.Search(func() *bleve.SearchRequest {
			r, _ := BuildRequest(req)
			r.SortBy([]string{"-_score", "_id"})
			return r
		}())
		if err != nil {
			t.Fatal(err)
		}
		ids := func(r *bleve.SearchResult) []string {
			var out []string
			for _, h := range r.Hits {
				out = append(out, h.ID)
			}
			return out
		}
		if !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("k=%d: got %v, want %v", k, ids(got), ids(want))
		}
		for _, h := range got.Hits {
			if h.Fields["text"] == nil {
				t.Fatalf("k=%d: %s has no stored fields", k, h.ID)
			}
		}
	}
}
