package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/searcher"
)

// The snapshot a bulk load ends with merges each shard's segments into
// one (searches visit every segment), unless the indexer is told not to;
// the searcher serves the merged shards, the same documents.
func TestBulkLoadMergesSegments(t *testing.T) {
	docs := catalogNDJSON(t, 2000)
	half := bytes.Index(docs[len(docs)/2:], []byte("\n")) + len(docs)/2 + 1
	first := uint64(bytes.Count(docs[:half], []byte("\n")))
	for _, tc := range []struct {
		name    string
		noMerge bool
	}{{"merged", false}, {"as they are", true}} {
		t.Run(tc.name, func(t *testing.T) {
			n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1, NoSnapshotMerge: tc.noMerge}, &searcher.Config{}, &broker.Config{})
			c, ctx := n.Client(), context.Background()
			if _, err := c.CreateIndex(ctx, "menu", 2, catalog.Mapping()); err != nil {
				t.Fatal(err)
			}
			// segments returns each shard's segments once none is in
			// memory, and the most a shard has.
			segments := func(want uint64) ([]string, uint64) {
				deadline := time.Now().Add(time.Minute)
				for {
					var out []string
					most, persisted := uint64(0), true
					for _, st := range n.Searcher.Stats() {
						out = append(out, fmt.Sprintf("%d+%d", st.FileSegments, st.MemorySegments))
						most = max(most, st.FileSegments+st.MemorySegments)
						persisted = persisted && st.MemorySegments == 0
					}
					if (persisted && most == want) || time.Now().After(deadline) {
						return out, most
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			// Two loads a persist apart: two segments a shard at least.
			if _, err := c.Bulk(ctx, "menu", bytes.NewReader(docs[:half]), client.BulkOptions{NoSnapshot: true}); err != nil {
				t.Fatal(err)
			}
			waitDocs(t, n, first)
			segments(1)
			res, err := c.Bulk(ctx, "menu", bytes.NewReader(docs[half:]), client.BulkOptions{})
			if err != nil || res.Snapshot == nil {
				t.Fatalf("the bulk load published no snapshot: %+v %v", res, err)
			}
			waitDocs(t, n, 2000)
			want := uint64(1)
			if tc.noMerge {
				want = 2
			}
			got, most := segments(want)
			t.Logf("segments of each shard (files+memory): %v", got)
			if most != want {
				t.Fatalf("segments of each shard %v, want %d", got, want)
			}
			if hits := total(c, "menu", "noodles"); hits <= 0 {
				t.Fatalf("noodles: %d hits", hits)
			}
		})
	}
}
