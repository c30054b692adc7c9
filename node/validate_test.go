package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// longQueryTrapWAT is a rewriter that changes nothing, except that it
// traps on a request over 300 bytes: a bug only some queries find.
const longQueryTrapWAT = `(module (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param i32 i32) (result i64)
    (if (i32.gt_u (local.get 1) (i32.const 300)) (then unreachable))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// TestValidationSamples: a version is run on the team's sample requests
// and on the index's recorded queries before it can go live, and a
// refusal names the sample that broke it.
func TestValidationSamples(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{RecordPercent: 100})
	c, ctx := n.Client(), context.Background()
	noodleIndex(t, c, "val", "v")
	wasm := wasmtest.WAT(t, longQueryTrapWAT)
	long := strings.Repeat("noodles ", 60)

	// The defaults alone do not find the bug.
	if v, err := c.PushPlugin(ctx, "val", "trap", wasm, client.PushOptions{Kind: "rewriter"}); err != nil || !v.Valid {
		t.Fatalf("push without samples: %+v %v", v, err)
	}
	// The team's own samples do.
	_, err := c.PushPlugin(ctx, "val", "trap", wasm, client.PushOptions{Kind: "rewriter",
		Samples: []api.SearchRequest{{Q: "noodles"}, {Q: long}}})
	if !strings.Contains(err.Error(), "your sample 2") || api.CodeOf(err) != api.CodeBadRequest {
		t.Fatalf("push with a breaking sample: got %v, want a refusal naming your sample 2", err)
	}
	// So does a query the index was really asked (brokers record them).
	if _, err := c.Search(ctx, "val", &api.SearchRequest{Q: long}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the long query recorded", func() bool {
		rec, err := c.RecordedQueries(ctx, "val", 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(rec) > 0
	})
	_, err = c.PushPlugin(ctx, "val", "trap2", wasm, client.PushOptions{Kind: "rewriter"})
	if err == nil || !strings.Contains(err.Error(), "recorded query") {
		t.Fatalf("push after a breaking query was recorded: got %v, want a refusal naming the recorded query", err)
	}
	// Too many samples are refused before anything runs.
	many := make([]api.SearchRequest, api.MaxValidationSamples+1)
	if _, err := c.PushPlugin(ctx, "val", "trap3", wasm, client.PushOptions{Kind: "rewriter", Samples: many}); api.CodeOf(err) != api.CodeBadRequest {
		t.Fatalf("too many samples: got %v", err)
	}
}
