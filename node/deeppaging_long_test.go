//go:build long

package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/searcher"
)

// TestDeepPaging walks 50,000 hits of a 60,000-document index by cursor
// (search_after, pages of 2,500 sorted by a number) while writes flow:
// new documents, whose numbers sort after the walk's, and updates of
// documents the walk has yet to reach (their numbers kept). It sees the
// first 50,000 numbers in order, each document exactly once, far past
// from + size's window of 10,000. Deletions during a walk are not
// covered: a cursor holds no point in time (docs/api.md, search_after).
func TestDeepPaging(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "deep", 4, nil); err != nil {
		t.Fatal(err)
	}
	const docs, walk, page = 60000, 50000, 2500
	var body bytes.Buffer
	for i := range docs {
		fmt.Fprintf(&body, `{"id":"d%05d","n":%d,"text":"first version"}`+"\n", i, i)
	}
	mustBulk(t, c, "deep", &body)

	// Writes all along the walk: a new document and an update of one
	// ahead of it, every 10 ms.
	writing, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var writes int
	wg.Go(func() {
		for i := 0; writing.Err() == nil; i++ {
			for _, doc := range []string{
				fmt.Sprintf(`{"id":"new%05d","n":%d,"text":"written during the walk"}`, i, docs+i),
				fmt.Sprintf(`{"id":"d%05d","n":%d,"text":"updated during the walk"}`, walk-1-i%walk, walk-1-i%walk),
			} {
				if _, err := c.Put(writing, "deep", []byte(doc)); err != nil && writing.Err() == nil {
					t.Errorf("write: %v", err)
				}
				writes++
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	seen := make(map[string]bool, walk)
	req := api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Sort: []string{"n"}, Size: page, Fields: []string{"n"}}
	next := 0
	for pages := 0; len(seen) < walk; pages++ {
		r, err := c.Search(ctx, "deep", &req)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(r.Hits) != page || r.Next == "" {
			t.Fatalf("page %d: %d hits, next %q", pages, len(r.Hits), r.Next)
		}
		for _, h := range r.Hits {
			if want := fmt.Sprintf("d%05d", next); h.ID != want || seen[h.ID] {
				t.Fatalf("page %d: %s, want %s (seen before: %v)", pages, h.ID, want, seen[h.ID])
			}
			seen[h.ID] = true
			next++
		}
		req.SearchAfter = r.Next
	}
	stop()
	wg.Wait()
	if writes < 20 {
		t.Errorf("only %d writes during the walk", writes)
	}
	t.Logf("%d hits walked in pages of %d, %d writes meanwhile", len(seen), page, writes)
}
