package node

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// writePipeline writes wasm modules and a pipeline file naming them.
func writePipeline(t *testing.T, modules map[string][]byte, file broker.PipelineFile) string {
	return writePipelineB(t, modules, file)
}

func writePipelineB(t testing.TB, modules map[string][]byte, file broker.PipelineFile) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range modules {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(file)
	path := filepath.Join(dir, "pipeline.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startWithPipeline starts a node with a 2-shard "menu" index of 600
// catalogue items, and applies the pipeline file, if any, through the
// registry.
func startWithPipeline(t *testing.T, pipeline string) *Node {
	t.Helper()
	ctx := context.Background()
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	loadCatalog(t, n, "menu", 2, catalogNDJSON(t, 600))
	if pipeline != "" {
		if _, err := n.ApplyPipelineFile(ctx, "menu", pipeline); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// A plugin written from the ABI alone (WAT) and Go plugins from the SDK
// change search results through the broker.
func TestPipelineChangesResults(t *testing.T) {
	t.Parallel()
	suffix := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
	spelling := wasmtest.GoPlugin(t, "../examples/plugins/spelling")
	ltr := wasmtest.GoPlugin(t, "../examples/plugins/ltr")
	path := writePipeline(t, map[string][]byte{"suffix.wasm": suffix, "spelling.wasm": spelling, "ltr.wasm": ltr}, broker.PipelineFile{
		Rewriters: []broker.StepFile{
			{Plugin: "spelling", Wasm: "spelling.wasm", BudgetMS: 2000, Config: json.RawMessage(`{"vocabulary":["noodles","burger"]}`)},
			{Plugin: "suffix", Wasm: "suffix.wasm"},
		},
		// Generous budgets: -race slows the host down a lot.
		Rankers: []broker.StepFile{{Plugin: "ltr", Wasm: "ltr.wasm", Fields: []string{"price"}, RerankDepth: 100, BudgetMS: 2000,
			Config: json.RawMessage(`{"weights":{"price":-1}}`)}},
	})
	n := startWithPipeline(t, path)
	c := n.Client()
	ctx := context.Background()

	r, err := c.Search(ctx, "menu", &api.SearchRequest{Q: "noodels", Size: 10, Fields: []string{"name"}, Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total == 0 || len(r.Pipeline) != 0 {
		t.Fatalf("misspelt query found nothing or a step failed: total %d, pipeline %+v", r.Total, r.Pipeline)
	}
	var rewrites []string
	for _, st := range r.Profile.Stages {
		if strings.HasPrefix(st.Name, "rewrite ") {
			rewrites = append(rewrites, st.Detail)
		}
	}
	if len(rewrites) != 2 || !strings.Contains(rewrites[0], `"noodels" → "noodles"`) || !strings.Contains(rewrites[1], `"noodles" → "noodles spicy"`) {
		t.Fatalf("rewrites: %q", rewrites)
	}
	// The ranker ordered by price, cheapest first; price was not asked for,
	// so it is not returned.
	var prices []float64
	for _, h := range r.Hits {
		if _, ok := h.Fields["price"]; ok {
			t.Fatalf("ranker-only field returned: %+v", h.Fields)
		}
		prices = append(prices, -h.Score)
	}
	for i := 1; i < len(prices); i++ {
		if prices[i] < prices[i-1] {
			t.Fatalf("not ordered by price by the ranker: %v", prices)
		}
	}
}

// A failing step: fail-open skips it and says so; fail-closed fails the
// query naming the plugin; the broker stays up either way.
func TestPipelineFailurePolicies(t *testing.T) {
	t.Parallel()
	trap := wasmtest.WAT(t, `(module (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param i32 i32) (result i64) unreachable)
  (func (export "quarry_rank") (param i32 i32) (result i64) unreachable))`)
	path := writePipeline(t, map[string][]byte{"trap.wasm": trap}, broker.PipelineFile{
		Rewriters: []broker.StepFile{{Plugin: "open-trap", Wasm: "trap.wasm", Policy: api.FailOpen}},
		Rankers:   []broker.StepFile{{Plugin: "closed-trap", Wasm: "trap.wasm", Policy: api.FailClosed}},
	})
	// Straight into the broker: the registry would refuse a plugin that
	// traps on its validation samples.
	n := startWithPipeline(t, "")
	pl, err := broker.LoadPipelineFile(context.Background(), mustRuntime(t), path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n.Broker.SetPipeline("menu", pl)
	_, err = n.Client().Search(context.Background(), "menu", &api.SearchRequest{Q: "pizza"})
	if api.CodeOf(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "ranker closed-trap failed (fail-closed)") || !strings.Contains(err.Error(), "trap") {
		t.Fatalf("fail-closed ranker: %v", err)
	}
	// Without the fail-closed ranker, the fail-open rewriter is skipped.
	n.Broker.SetPipeline("menu", nil)
	pl, err = broker.LoadPipelineFile(context.Background(), mustRuntime(t), writePipeline(t, map[string][]byte{"trap.wasm": trap}, broker.PipelineFile{
		Rewriters: []broker.StepFile{{Plugin: "open-trap", Wasm: "trap.wasm"}}}), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n.Broker.SetPipeline("menu", pl)
	r, err := n.Client().Search(context.Background(), "menu", &api.SearchRequest{Q: "pizza"})
	if err != nil || r.Total == 0 || len(r.Pipeline) != 1 || r.Pipeline[0].Plugin != "open-trap" || r.Pipeline[0].Status != "skipped" {
		t.Fatalf("fail-open rewriter: %v %+v", err, r)
	}
}

// A pipeline file is one more way to write the registry's pipeline, not a
// second truth: `pipeline show` and every broker agree with it; a push
// adds to it; a restart with the same file keeps what was pushed since;
// a changed file is applied again.
func TestPipelineFileOneTruth(t *testing.T) {
	t.Parallel()
	suffix := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
	path := writePipeline(t, map[string][]byte{"suffix.wasm": suffix}, broker.PipelineFile{
		Rewriters: []broker.StepFile{{Plugin: "suffix", Wasm: "suffix.wasm", BudgetMS: 2000}}})
	data := t.TempDir()
	n := startConfig(t, Config{DataDir: data, Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	ctx := context.Background()
	c := n.Client()
	noodleIndex(t, c, "menu", "m")
	applied, err := n.ApplyPipelineFile(ctx, "menu", path)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := c.Pipeline(ctx, "menu")
	if err != nil || spec.Revision != applied.Revision || len(spec.Rewriters) != 1 || !strings.HasPrefix(spec.Change, "pipeline file ") {
		t.Fatalf("pipeline show after the file: %+v %v", spec, err)
	}
	waitPipelineRevision(t, n, "menu", spec.Revision)
	// Applying it again writes nothing.
	if again, err := n.ApplyPipelineFile(ctx, "menu", path); err != nil || again.Revision != spec.Revision {
		t.Fatalf("the same file again: %+v %v", again, err)
	}
	// A push with --activate adds a step to the file's pipeline.
	if _, err := c.PushPlugin(ctx, "menu", "other", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter", Activate: true}); err != nil {
		t.Fatal(err)
	}
	pushed, err := c.Pipeline(ctx, "menu")
	if err != nil || len(pushed.Rewriters) != 2 || pushed.Rewriters[0].Plugin != "suffix" || pushed.Rewriters[1].Plugin != "other" {
		t.Fatalf("after push --activate: %+v %v", pushed, err)
	}
	// Restarted with the same file: what was pushed stays.
	n.Close()
	n = startConfig(t, Config{DataDir: data, Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	c = n.Client()
	if after, err := n.ApplyPipelineFile(ctx, "menu", path); err != nil || after.Revision != pushed.Revision || len(after.Rewriters) != 2 {
		t.Fatalf("restart with the same file replaced the pushed pipeline: %+v %v", after, err)
	}
	waitPipelineRevision(t, n, "menu", pushed.Revision)
	// A restarted searcher is ready before it serves the shards it had
	// (Searcher.Ready never waits for the initial indexes): wait for them.
	waitIndexed(t, c, "menu", 30)
	r, err := c.Search(ctx, "menu", &api.SearchRequest{Q: "noodles", Profile: true})
	if err != nil || rewrites(r) != "rewrite suffix,rewrite other" {
		t.Fatalf("what runs after the restart: %v %+v", err, r)
	}
	// A changed file is applied.
	changed := writePipeline(t, map[string][]byte{"suffix.wasm": suffix}, broker.PipelineFile{
		Rewriters: []broker.StepFile{{Plugin: "suffix", Wasm: "suffix.wasm", BudgetMS: 1000}}})
	spec, err = n.ApplyPipelineFile(ctx, "menu", changed)
	if err != nil || spec.Revision <= pushed.Revision || len(spec.Rewriters) != 1 || spec.Rewriters[0].BudgetMS != 1000 {
		t.Fatalf("a changed file: %+v %v", spec, err)
	}
	if st, err := c.BrokerPipelines(ctx, 0); err != nil || len(st) != 1 || st[0].Revisions["menu"] != spec.Revision {
		t.Fatalf("brokers after the changed file: %+v %v (want revision %d)", st, err, spec.Revision)
	}
	// An index that does not exist is refused by name.
	if _, err := n.ApplyPipelineFile(ctx, "nosuch", path); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("a file for a missing index: %v", err)
	}
}

// TestSecondBrokerRevisions: a broker started beside a running one, under
// load, takes no search before it holds the index's pipeline (issue 35:
// one search in 12 ran without the spelling step). Every response says
// which pipeline revision it ran, and every one ran the live one.
func TestSecondBrokerRevisions(t *testing.T) {
	core := startNode(t)
	c := core.Client()
	ctx := context.Background()
	noodleIndex(t, c, "rv", "r")
	if _, err := c.PushPlugin(ctx, "rv", "same", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter", Activate: true}); err != nil {
		t.Fatal(err)
	}
	l, err := c.Plugins(ctx, "rv")
	if err != nil {
		t.Fatal(err)
	}
	live := l.Pipeline.Revision
	waitPipelineRevision(t, core, "rv", live)

	stop := make(chan struct{})
	var load sync.WaitGroup
	var mu sync.Mutex
	revs := map[uint64]int{}
	var failures []error
	for range 2 {
		load.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := c.Search(ctx, "rv", &api.SearchRequest{Q: "noodles"})
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else {
					revs[r.PipelineRevision]++
				}
				mu.Unlock()
			}
		})
	}
	second := startRoles(t, core.NATSURL(), nil, nil, &broker.Config{})
	answered := func() float64 {
		return max(0, sum(scrape(t, "http://"+second.HTTPAddr+"/metrics"), "quarry_broker_requests_total", map[string]string{"index": "rv"}))
	}
	waitUntil(t, 30*time.Second, "the second broker answered 50 searches", func() bool { return answered() >= 50 })
	close(stop)
	load.Wait()
	t.Logf("revisions of the responses: %v (the live one %d); the second broker answered %.0f", revs, live, answered())
	if len(failures) > 0 {
		t.Errorf("%d searches failed, the first: %v", len(failures), failures[0])
	}
	if len(revs) != 1 || revs[live] == 0 {
		t.Errorf("responses ran revisions %v, want only the live one, %d", revs, live)
	}
}
