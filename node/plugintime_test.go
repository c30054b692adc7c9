package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
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
	n := startConfig(t, allRoles(Config{PluginMaxBudget: 30 * time.Second}))
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
	took := time.Since(start)
	if took > 3*time.Second {
		t.Fatalf("a search with timeout_ms 300 answered after %s (%v)", took, err)
	}
	t.Logf("timeout_ms 300 over a rewriter spinning with budget_ms 30000: answered in %s", took.Round(time.Millisecond))
	if !errors.Is(err, api.ErrTimeout) || !strings.Contains(err.Error(), "rewriters") || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("timeout_ms 300 over a spinning rewriter: %v", err)
	}

	// Removing the plugin stops the call a long search is in.
	done := make(chan error, 1)
	go func() {
		_, err := c.Search(ctx, "pt", &api.SearchRequest{Q: "noodles", TimeoutMS: 25000})
		done <- err
	}()
	// The call is under way (it never returns by itself).
	testwait.Until(t, 10*time.Second, "the spinning call runs", func() bool {
		return counter(t, n, "quarry_team_plugin_calls_running", map[string]string{"team": "index-pt"}) == 1
	})
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

// TestAdminPerTeam: admin requests of different teams run at once. While
// team alpha's push waits on a validation that takes seconds (its sample
// query spins for the step's budget), team beta pushes and activates a
// plugin: beta's calls answer before alpha's push does.
func TestAdminPerTeam(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t)
	c := n.Client()
	for _, def := range []api.IndexDefinition{{Name: "slowteam", Shards: 1, Team: "alpha"}, {Name: "quickteam", Shards: 1, Team: "beta"}} {
		if _, err := c.CreateIndexDef(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
	spin := wasmtest.WAT(t, spinWAT)
	alphaDone := make(chan error, 1)
	go func() {
		_, err := c.PushPlugin(ctx, "slowteam", "spin", spin, client.PushOptions{Kind: "rewriter",
			Step: api.StepSpec{BudgetMS: 4000}, Samples: []api.SearchRequest{{Q: "noodles"}}})
		alphaDone <- err
	}()
	// Alpha's validation is under way once its team's runtime runs a call.
	time.Sleep(500 * time.Millisecond) // the upload and the compile of a 200-byte module take milliseconds
	start := time.Now()
	v, err := c.PushPlugin(ctx, "quickteam", "identity", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	select {
	case err := <-alphaDone:
		t.Fatalf("team alpha's push answered (%v) before team beta's, which took %s: beta waited for alpha", err, took)
	default:
	}
	if !v.Valid {
		t.Fatalf("beta's version: %+v", v)
	}
	if err := <-alphaDone; err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("alpha's spinning version: %v, want refused for its budget", err)
	}
	t.Logf("beta's push and activation took %s beside alpha's 4-second validation", took)
}

// TestVariantPipelineBounded: a search that asks for a variant pipeline of
// 32 steps of a version that spins (issue 34: 1.6 s of plugin CPU a
// search) stops at its own deadline, like a live one, and the spinning
// plugin's calls count as its team's cost.
func TestVariantPipelineBounded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "vp", 1, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "vp", ndjson(10, "t"))
	v, err := c.PushPlugin(ctx, "vp", "spin", wasmtest.WAT(t, spinWAT), client.PushOptions{Kind: "rewriter", Step: api.StepSpec{BudgetMS: 5000}})
	if err != nil {
		t.Fatal(err)
	}
	steps := make([]api.StepSpec, 32)
	for i := range steps {
		steps[i] = api.StepSpec{Plugin: "spin", Digest: v.Digest}
	}
	start := time.Now()
	_, err = c.Search(ctx, "vp", &api.SearchRequest{Q: "noodles", TimeoutMS: 300, Variant: &api.Variant{Pipeline: &api.PipelineSpec{Rewriters: steps}}})
	took := time.Since(start)
	if !errors.Is(err, api.ErrTimeout) || took > 3*time.Second {
		t.Fatalf("a variant of 32 spinning steps with timeout_ms 300: %v after %s, want a timeout at its deadline", err, took)
	}
	t.Logf("answered %v after %s", err, took.Round(time.Millisecond))
}
