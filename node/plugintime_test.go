package node

import (
	"context"
	"errors"
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

// spinWAT is a rewriter that changes nothing and, on any 7-byte q
// ("noodles"), loops for ever: validation's sample queries pass it.
const spinWAT = `(module (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param $p i32) (param i32) (result i64)
    (if (i32.eq (i32.load (local.get $p)) (i32.const 7))
      (then (loop $spin (br $spin))))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// TestPluginTimeBounded: a step's budget_ms has an operator maximum; a
// plugin call that spins stops at the search's deadline, under any
// budget; and removing the plugin stops a call that is running.
func TestPluginTimeBounded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startConfig(t, Config{PluginMaxBudget: 30 * time.Second, Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "pt", 1, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "pt", ndjson(10, "t"))
	wasm := wasmtest.WAT(t, spinWAT)

	// Over the maximum: refused, the maximum named.
	_, err := c.PushPlugin(ctx, "pt", "spin", wasm, client.PushOptions{Kind: "rewriter", Activate: true, Step: api.StepSpec{BudgetMS: 30001}})
	if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "30000") || !strings.Contains(err.Error(), "--plugin-max-budget") {
		t.Fatalf("budget_ms 30001 with a maximum of 30s: %v", err)
	}

	// At the maximum: the search's own deadline stops the call.
	if _, err := c.PushPlugin(ctx, "pt", "spin", wasm, client.PushOptions{Kind: "rewriter", Activate: true, Step: api.StepSpec{BudgetMS: 30000}}); err != nil {
		t.Fatal(err)
	}
	waitLive(t, 20*time.Second, n.Broker, c, "pt")
	start := time.Now()
	_, err = c.Search(ctx, "pt", &api.SearchRequest{Q: "noodles", TimeoutMS: 300})
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("a search with timeout_ms 300 answered after %s (%v)", took, err)
	}
	if !errors.Is(err, api.ErrTimeout) || !strings.Contains(err.Error(), "rewriters") || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("timeout_ms 300 over a spinning rewriter: %v", err)
	}

	// Removing the plugin stops the call a long search is in.
	done := make(chan error, 1)
	go func() {
		_, err := c.Search(ctx, "pt", &api.SearchRequest{Q: "noodles", TimeoutMS: 25000})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the call is under way (it never returns by itself)
	if _, err := c.RemovePlugin(ctx, "pt", "spin"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	select {
	case err := <-done:
		t.Logf("after plugin rm: %v in %s", err, time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("plugin rm left the call running: the search did not answer within 5s")
	}
}
