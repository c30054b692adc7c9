package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// TestReindex: an index rebuilt from the stream into one of more shards
// while a writer writes through its alias every few milliseconds, then
// the alias switched by the reindex: the new index holds every document
// the old one held at the end and every acknowledged write (none lost,
// none deleted come back), searchable. A reindex stopped midway resumes
// from its position; one whose new index refuses documents names them
// and switches nothing.
func TestReindex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "shop-v1", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "shop-v1", ndjson(300, "d")) // 100 noodles
	for i := range 30 {                         // 10 noodles gone
		if _, err := c.Delete(ctx, "shop-v1", fmt.Sprintf("d%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateAlias(ctx, "shop", "shop-v1"); err != nil {
		t.Fatal(err)
	}
	// A live rewriter (it appends " spicy" to q), which the new index
	// gets too.
	suffix := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
	live, err := c.PushPlugin(ctx, "shop-v1", "suffix", suffix, client.PushOptions{Kind: "rewriter", Activate: true, Step: api.StepSpec{BudgetMS: 50}})
	if err != nil {
		t.Fatal(err)
	}

	// A first reindex, stopped after two chunks of 50: its position is
	// kept.
	stopped, stop := context.WithCancel(ctx)
	chunks := 0
	_, err = c.Reindex(stopped, "shop-v1", "shop-v2", client.ReindexOptions{Shards: 3, Chunk: 50, OnProgress: func(p client.ReindexProgress) {
		if chunks++; chunks == 2 {
			stop()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped reindex: %v", err)
	}
	// d0031 came in the first chunk: the resumed reindex does not copy
	// it again (its version in the new index keeps its sequence).
	early, err := c.Get(ctx, "shop-v2", "d0031")
	if err != nil {
		t.Fatalf("a document of the first chunk: %v", err)
	}

	// Writes through the alias, all along the resumed reindex and its
	// switch; every acknowledged one is counted.
	w, err := client.New(ctx, n.nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []string
	)
	writing, stopWriting := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; writing.Err() == nil; i++ {
			id := fmt.Sprintf("w%04d", i)
			if _, err := w.Put(ctx, "shop", fmt.Appendf(nil, `{"id":%q,"text":"noodles written live"}`, id)); err != nil {
				t.Errorf("write %s: %v", id, err)
				return
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, err := c.Reindex(ctx, "shop-v1", "shop-v2", client.ReindexOptions{Alias: "shop", Chunk: 50, Grace: 500 * time.Millisecond})
	stopWriting()
	<-done
	if err != nil {
		t.Fatalf("reindex: %v %+v", err, res)
	}
	if !res.Switched || res.Deleted != 30 {
		t.Errorf("resumed reindex: %+v, want switched, with the 30 deletions", res)
	}
	if again, err := c.Get(ctx, "shop-v2", "d0031"); err != nil || again.Seq != early.Seq {
		t.Errorf("d0031 copied again by the resumed reindex (seq %d, then %+v %v): it did not go on from its position", early.Seq, again, err)
	}
	if a, err := c.Alias(ctx, "shop"); err != nil || a.Index != "shop-v2" {
		t.Fatalf("alias after the reindex: %+v %v", a, err)
	}
	def, err := c.Index(ctx, "shop-v2")
	if err != nil || def.Shards != 3 {
		t.Fatalf("new index: %+v %v", def, err)
	}
	mu.Lock()
	writes := append([]string(nil), acked...)
	mu.Unlock()
	if len(writes) < 5 {
		t.Fatalf("only %d writes during the reindex", len(writes))
	}
	for _, id := range writes {
		if _, err := c.Get(ctx, "shop-v2", id); err != nil {
			t.Errorf("acknowledged write %s is not in the new index: %v", id, err)
		}
	}
	for _, id := range []string{"d0000", "d0029"} {
		if _, err := c.Get(ctx, "shop-v2", id); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("deleted %s in the new index: %v", id, err)
		}
	}
	testwait.UntilErr(t, 20*time.Second, "the alias searches the new index, every write in it", func() error {
		r, err := c.Search(ctx, "shop", &api.SearchRequest{Query: json.RawMessage(`{"match":"noodles","field":"text"}`), Size: api.NoHits})
		if err != nil {
			return err
		}
		if r.Index != "shop-v2" || r.Total != uint64(90+len(writes)) {
			return fmt.Errorf("index %q, total %d, want shop-v2, %d", r.Index, r.Total, 90+len(writes))
		}
		return nil
	})

	spec, err := c.Pipeline(ctx, "shop-v2")
	if err != nil || len(spec.Rewriters) != 1 || spec.Rewriters[0].Plugin != "suffix" || spec.Rewriters[0].Digest != live.Digest || spec.Rewriters[0].BudgetMS != 50 {
		t.Fatalf("the new index's pipeline: %+v %v, want the source's suffix %s", spec, err, live.Digest)
	}
	if r, err := c.Search(ctx, "shop", &api.SearchRequest{Q: "mild", Size: api.NoHits}); err != nil || r.Total != 270 {
		t.Errorf(`"mild" through the alias: %+v %v, want the rewriter's "mild spicy": 270 (without it, "mild": 90)`, r, err)
	}

	// A new index that refuses the documents (at most 2 fields each;
	// they have 3): named, and the alias stays.
	small := api.IndexDefinition{Name: "shop-small", Shards: 1, Documents: api.DocumentLimits{MaxFields: 2}}
	if _, err := c.CreateIndexDef(ctx, small); err != nil {
		t.Fatal(err)
	}
	res, err = c.Reindex(ctx, "shop-v2", "shop-small", client.ReindexOptions{Alias: "shop"})
	if !errors.Is(err, client.ErrReindexRefused) || res.RefusedCount == 0 || len(res.Refused) == 0 || !strings.Contains(err.Error(), "more than 2 fields") {
		b, _ := json.Marshal(res)
		t.Fatalf("reindex into an index that refuses: %v %s", err, b)
	}
	if a, _ := c.Alias(ctx, "shop"); a.Index != "shop-v2" {
		t.Fatalf("alias switched although documents were refused: %+v", a)
	}
	// Not an alias of the source, not the source itself.
	for _, bad := range []struct {
		src, dst, alias, msg string
	}{
		{"shop-v1", "shop-v3", "shop", `alias "shop" points at "shop-v2", not at "shop-v1"`},
		{"shop-v2", "shop-v2", "", "both"},
		{"nothing", "x", "", `index "nothing" does not exist`},
	} {
		if _, err := c.Reindex(ctx, bad.src, bad.dst, client.ReindexOptions{Alias: bad.alias}); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("reindex %s → %s (alias %q): %v, want %q", bad.src, bad.dst, bad.alias, err, bad.msg)
		}
	}
}
