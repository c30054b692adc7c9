package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/searcher"
)

// TestShardPanicServesOn: a shard search that panics (here every third,
// injected while it holds its shard) answers its request with an internal
// error naming the request id, and the searcher serves on: later searches
// succeed, and the node closes (the shard's lock was given back).
func TestShardPanicServesOn(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startConfig(t, allRoles(Config{Searcher: &searcher.Config{FaultPanic: true, FaultEvery: 3}}))
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "pan", 1, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "pan", ndjson(10, "t"))
	failed, ok := 0, 0
	for range 12 {
		_, err := c.Search(ctx, "pan", &api.SearchRequest{Q: "noodles"})
		switch {
		case err == nil:
			ok++
		case strings.Contains(err.Error(), "internal error on shard 0 (request id "):
			failed++
		default:
			t.Fatalf("a search beside panicking ones: %v", err)
		}
	}
	if failed == 0 || ok == 0 {
		t.Fatalf("%d searches failed with an internal error and %d succeeded, want some of each", failed, ok)
	}
	t.Logf("%d internal errors, %d answers", failed, ok)
}
