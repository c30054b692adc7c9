package node

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/searcher"
)

// TestHeavyByCostNotLatency: a team is classed heavy by what its searches
// cost (searcher and plugin time), not by their latency, which others'
// load stretches. Every shard request here waits 200 ms before it is
// searched (a slow replica), so every search takes over the 60 ms of
// --heavy-search, while each costs a millisecond or so (some tens under
// -race beside the whole suite, which is why the bound is not nearer):
// two teams searching at once are never made to take turns, and never
// refused.
func TestHeavyByCostNotLatency(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startConfig(t, allRoles(Config{Searcher: &searcher.Config{FaultDelay: 200 * time.Millisecond, FaultEvery: 1},
		Broker: &broker.Config{HeavyAfter: 60 * time.Millisecond, HeavySearches: 1, HeavyWait: 30 * time.Millisecond}}))
	c := n.Client()
	for _, def := range []api.IndexDefinition{{Name: "fa", Shards: 1, Team: "alpha"}, {Name: "fb", Shards: 1, Team: "beta"}} {
		if _, err := c.CreateIndexDef(ctx, def); err != nil {
			t.Fatal(err)
		}
		mustBulk(t, c, def.Name, ndjson(20, "t"))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for _, index := range []string{"fa", "fb"} {
		for range 2 {
			wg.Go(func() {
				for range 10 {
					if _, err := c.Search(ctx, index, &api.SearchRequest{Q: "noodles"}); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if errors.Is(err, api.ErrOverloaded) {
			t.Fatalf("a search was refused as heavy for a latency it did not cost: %v", err)
		}
		t.Fatal(err)
	}
}
