package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/searcher"
)

// TestLocalShards: a broker asks the searcher of its own node directly
// (broker.UseLocal) for the shard it serves, and the other node's
// searcher over NATS for the one it does not; with ShardsOverNATS both
// shards go through the NATS server, the queue group sharing shard 0
// between the two searchers. The answers are the same either way.
func TestLocalShards(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overNATS  bool
		wantLocal bool
	}{{"direct", false, true}, {"over NATS", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			a := startConfig(t, Config{Indexer: &indexer.Config{}, Searcher: &searcher.Config{Index: "local", Shards: []int{0}}, Broker: &broker.Config{NoHedge: true}, ShardsOverNATS: tc.overNATS})
			b := startRoles(t, a.NATSURL(), nil, &searcher.Config{}, nil)
			c, ctx := a.Client(), context.Background()
			if _, err := c.CreateIndex(ctx, "local", 2, nil); err != nil {
				t.Fatal(err)
			}
			mustBulk(t, c, "local", ndjson(30, "d"))
			waitTotal(t, c, "local", "noodles", 10)
			waitDocs(t, b, 30)                         // both shards
			waitDocs(t, a, b.Searcher.Stats()[0].Docs) // shard 0, as b's
			local0 := int64(counter(t, a, localTotal, nil))
			before := b.Searcher.Status().Requests
			var first *api.SearchResponse
			for i := range 40 {
				resp, err := c.Search(ctx, "local", &api.SearchRequest{Q: "spicy noodles", Size: 5})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Total != 20 || len(resp.Hits) != 5 {
					t.Fatalf("search %d: %d hits of %d, want 5 of 20", i, len(resp.Hits), resp.Total)
				}
				if first == nil {
					first = resp
				}
				for j := range resp.Hits {
					if resp.Hits[j].ID != first.Hits[j].ID || resp.Hits[j].Score != first.Hits[j].Score {
						t.Fatalf("search %d hit %d: %s %g, the first search's %s %g", i, j, resp.Hits[j].ID, resp.Hits[j].Score, first.Hits[j].ID, first.Hits[j].Score)
					}
				}
			}
			local, remote := int64(counter(t, a, localTotal, nil))-local0, int64(b.Searcher.Status().Requests-before)
			// Each search asks each shard once (no hedges): directly,
			// shard 0's requests are the broker's node's and shard 1's
			// the other's, as many.
			if tc.wantLocal && (local < 40 || remote != local) {
				t.Fatalf("direct: %d shard requests answered in the broker's node, %d by the other; want shard 0's (40 or more) in its own, as many of shard 1's by the other", local, remote)
			}
			if !tc.wantLocal && (local != 0 || remote <= 40) {
				t.Fatalf("over NATS: %d answered directly, %d by the other node; want none directly, shard 1's and some of shard 0's by the other", local, remote)
			}
		})
	}
}

// TestLocalQueueBound: requests asked of the broker's own searcher
// directly are held to its queue like requests over NATS: with one
// worker and a queue of one, of four searches at once one runs, one
// waits, and the others are refused as overloaded (the direct path
// finds the queue full and asks over NATS, where the same searcher
// refuses them), not queued past the bound; the client sees code
// overloaded, to back off as from a broker's own refusal.
func TestLocalQueueBound(t *testing.T) {
	n := startConfig(t, Config{Indexer: &indexer.Config{}, Searcher: &searcher.Config{Workers: 1, QueueLen: 1, FaultDelay: time.Second},
		Broker: &broker.Config{NoHedge: true}})
	c, ctx := n.Client(), context.Background()
	if _, err := c.CreateIndex(ctx, "bound", 1, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "bound", ndjson(30, "d"))
	waitTotal(t, c, "bound", "noodles", 10)
	local0 := int64(counter(t, n, localTotal, nil))
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := c.Search(ctx, "bound", &api.SearchRequest{Q: "noodles", TimeoutMS: 10000})
			errs <- err
		}()
	}
	ok, overloaded := 0, 0
	for range 4 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case api.CodeOf(err) == api.CodeOverloaded && strings.Contains(err.Error(), "searcher overloaded"):
			overloaded++
		default:
			t.Errorf("a search: %v, want an answer or overloaded", err)
		}
	}
	if ok < 1 || ok > 2 || overloaded != 4-ok {
		t.Fatalf("%d answered, %d refused as overloaded; want one or two answered (a worker, a queue of one), the others refused", ok, overloaded)
	}
	// A request that found the queue full directly may find room over
	// NATS a moment later (the worker took the first): it is answered,
	// but not directly.
	if got := int64(counter(t, n, localTotal, nil)) - local0; got < 1 || got > int64(ok) {
		t.Fatalf("%d shard requests answered directly, want 1 to the %d answered searches'", got, ok)
	}
}

// localTotal counts the shard requests the broker's own searcher answered
// directly.
const localTotal = "quarry_broker_shard_requests_local_total"
