package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/searcher"
)

// A facet's top terms over several shards: "y" is second on shard 0 (4
// against x's 5) and first on shard 1 (3), so it leads the index with 7.
// Were each shard to send only its top term, the merge would see x 5 and
// y 3 and name x.
func TestFacetTopTermsAcrossShards(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "skew", 2, catalog.Mapping()); err != nil {
		t.Fatal(err)
	}
	want := []map[string]int{{"x": 5, "y": 4}, {"y": 3, "z": 1}} // per shard
	var docs bytes.Buffer
	next, total := 0, 0
	for shard, counts := range want {
		for cuisine, count := range counts {
			for range count {
				id := ""
				for id == "" || subject.ShardOf(id, 2) != shard {
					id = fmt.Sprintf("d%d", next)
					next++
				}
				fmt.Fprintf(&docs, `{"id":%q,"name":"dish","cuisine":%q}`+"\n", id, cuisine)
				total++
			}
		}
	}
	if res, err := c.Bulk(ctx, "skew", &docs, client.BulkOptions{}); err != nil || res.Stored != total {
		t.Fatalf("bulk: %+v %v", res, err)
	}
	waitDocs(t, n, uint64(total))
	r, err := c.Search(ctx, "skew", &api.SearchRequest{Q: "dish", Size: api.NoHits, Facets: map[string]api.FacetRequest{"c": {Field: "cuisine", Size: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Facets["c"]
	if len(f.Terms) != 1 || f.Terms[0].Term != "y" || f.Terms[0].Count != 7 || f.Other != 6 || f.Total != 13 {
		t.Fatalf("facet: %+v, want y 7 first, 6 others, 13 in all", f)
	}
}
