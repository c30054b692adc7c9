package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// An index created a moment ago exists for every broker, even one whose
// watch has not delivered the definition yet: the deploy test once saw
// 22 queries answered "index does not exist" by the broker that learned
// of a new index last. A name no one created is still not found.
func TestNewIndexIsNeverMissing(t *testing.T) {
	s, store, ctx := startStore(t)
	b, err := New(s.Conn(t, "broker"), store, Config{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- b.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-b.Ready():
	case err := <-ran:
		t.Fatal(err)
	}
	missing := 0
	for i := range 40 {
		name := fmt.Sprintf("new-%d", i)
		if _, err := store.CreateIndex(ctx, api.IndexDefinition{Name: name, Shards: 1}); err != nil {
			t.Fatal(err)
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := b.Search(qctx, name, &api.SearchRequest{Q: "pizza"})
		cancel()
		if api.CodeOf(err) == api.CodeNotFound {
			missing++
			t.Logf("%s: %v", name, err)
		}
	}
	if missing > 0 {
		t.Fatalf("%d of 40 indexes searched right after their creation did not exist", missing)
	}
	_, err = b.Search(ctx, "never-made", &api.SearchRequest{Q: "pizza"})
	if api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("an index no one made: %v, want not_found", err)
	}
}
