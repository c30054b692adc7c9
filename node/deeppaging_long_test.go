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
// (search_after, pages of 2,500 sorted by a number) over a point in time
// opened by its first page, while writes flow: new documents whose
// numbers fall among the walk's, updates and deletes of documents the
// walk has yet to reach. It sees the first 50,000 documents of that
// moment, in order, each exactly once and as first written, far past
// from + size's window of 10,000.
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

	// The first page opens a point in time; from then on, writes all
	// along the walk, every 10 ms: a new document, an update of one
	// ahead of the walk and a delete of another ahead of it. The walk
	// sees none of them.
	seen := make(map[string]bool, walk)
	req := api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Sort: []string{"n"}, Size: page, Fields: []string{"n", "text"},
		PIT: &api.PITRequest{KeepAlive: "1m"}}
	writing, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var writes int
	write := func() {
		for i := 0; writing.Err() == nil; i++ {
			for _, doc := range []string{
				fmt.Sprintf(`{"id":"new%05d","n":%d.5,"text":"written during the walk"}`, i, i%walk),
				fmt.Sprintf(`{"id":"d%05d","n":%d,"text":"updated during the walk"}`, walk-1-2*(i%(walk/2)), walk-1-2*(i%(walk/2))),
			} {
				if _, err := c.Put(writing, "deep", []byte(doc)); err != nil && writing.Err() == nil {
					t.Errorf("write: %v", err)
				}
				writes++
			}
			if _, err := c.Delete(writing, "deep", fmt.Sprintf("d%05d", walk-2-2*(i%(walk/2)))); err != nil && writing.Err() == nil {
				t.Errorf("delete: %v", err)
			}
			writes++
			time.Sleep(10 * time.Millisecond)
		}
	}
	next := 0
	for pages := 0; len(seen) < walk; pages++ {
		r, err := c.Search(ctx, "deep", &req)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(r.Hits) != page || r.Next == "" || r.PIT == "" {
			t.Fatalf("page %d: %d hits, next %q, point in time %q", pages, len(r.Hits), r.Next, r.PIT)
		}
		for _, h := range r.Hits {
			if want := fmt.Sprintf("d%05d", next); h.ID != want || seen[h.ID] || h.Fields["text"] != "first version" {
				t.Fatalf("page %d: %s (%v), want %s as first written (seen before: %v)", pages, h.ID, h.Fields["text"], want, seen[h.ID])
			}
			seen[h.ID] = true
			next++
		}
		req.SearchAfter, req.PIT.ID = r.Next, r.PIT
		if pages == 0 {
			wg.Go(write)
		}
	}
	stop()
	wg.Wait()
	if writes < 20 {
		t.Errorf("only %d writes during the walk", writes)
	}
	t.Logf("%d hits walked in pages of %d, %d writes meanwhile", len(seen), page, writes)
}
