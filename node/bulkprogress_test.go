package node

import (
	"context"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/searcher"
)

// Bulk's progress follows indexing, not reading: a report never counts
// more documents indexed than stored or goes back, and says all are
// indexed only once the searchers serve them all. (Bulk returns once the
// indexer's snapshot holds every document; the searchers may trail it.)
// With no searcher it says it cannot tell (-1).
func TestBulkProgressFollowsIndexing(t *testing.T) {
	const docs = 3000
	cases := []struct {
		name     string
		searcher bool
	}{
		{"with a searcher", true},
		{"no searcher", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A broker either way: the admin service beside it answers
			// how far each shard's searchers have applied the stream.
			cfg := Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Broker: &broker.Config{}}
			if tc.searcher {
				cfg.Searcher = &searcher.Config{}
			}
			n := startConfig(t, cfg)
			ctx := context.Background()
			c := n.Client()
			if _, err := c.CreateIndex(ctx, "p", 3, nil); err != nil {
				t.Fatal(err)
			}
			served := func() (sum uint64) {
				if n.Searcher == nil {
					return 0
				}
				for _, st := range n.Searcher.Stats() {
					sum += st.Docs
				}
				return sum
			}
			var reports []client.BulkProgress
			complete := -1 // the report that first said all indexed
			onProgress := func(p client.BulkProgress) {
				if p.Indexed == docs && complete < 0 {
					complete = len(reports)
					if got := served(); got != docs {
						t.Errorf("all %d reported indexed while the searcher serves %d", docs, got)
					}
				}
				reports = append(reports, p)
			}
			res, err := c.Bulk(ctx, "p", ndjson(docs, "p"), client.BulkOptions{OnProgress: onProgress, ProgressEvery: 20 * time.Millisecond})
			if err != nil || res.Stored != docs {
				t.Fatalf("bulk: %+v %v", res, err)
			}
			if len(reports) < 2 {
				t.Fatalf("%d reports", len(reports))
			}
			prev := client.BulkProgress{Indexed: -1}
			for i, p := range reports {
				switch {
				case p.Stored > p.Lines || p.Indexed > p.Stored:
					t.Errorf("report %d counts more than it could: %+v", i, p)
				case p.Elapsed < prev.Elapsed || p.Stored < prev.Stored || p.Indexed < prev.Indexed && tc.searcher:
					t.Errorf("report %d goes back: %+v after %+v", i, p, prev)
				case !tc.searcher && p.Indexed != -1:
					t.Errorf("report %d claims %d indexed with no searcher", i, p.Indexed)
				}
				prev = p
			}
			last := reports[len(reports)-1]
			if !last.ReadAll || last.Lines != docs || last.Stored != docs || last.Publishing {
				t.Errorf("last report %+v, want all %d read and stored", last, docs)
			}
			if tc.searcher && last.Indexed <= 0 {
				t.Errorf("last report %+v: indexing not followed", last)
			}
		})
	}
}
