package node

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// rewrites returns the plugin stages' details of a profiled search.
func rewrites(r *api.SearchResponse) string {
	var out []string
	for _, st := range r.Profile.Stages {
		if strings.HasPrefix(st.Name, "rewrite ") || strings.HasPrefix(st.Name, "rank ") {
			out = append(out, st.Name)
		}
	}
	return strings.Join(out, ",")
}

// A team pushes, activates and rolls back plugins through the admin API
// while queries run: every change goes live without a restart, no query
// fails, bad input is refused and leaves the pipeline as it was.
func TestRegistryPushActivateRollback(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c := n.Client()
	ctx := context.Background()
	loadCatalog(t, n, "reg", 2, catalogNDJSON(t, 400))

	var queries, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			queries.Add(1)
			if _, err := c.Search(ctx, "reg", &api.SearchRequest{Q: "pizza"}); err != nil {
				failed.Add(1)
				t.Errorf("query during changes: %v", err)
			}
		}
	})
	waitStages := func(want string) *api.SearchResponse {
		t.Helper()
		// Generous: compiling a Go plugin under -race on a busy machine is slow.
		deadline := time.Now().Add(3 * time.Minute)
		for {
			r, err := c.Search(ctx, "reg", &api.SearchRequest{Q: "pizza", Profile: true, Fields: []string{"price"}})
			if err == nil && rewrites(r) == want {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("pipeline stages never became %q (last %v, %v)", want, r, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	suffix := wasmtest.WATFile(t, "../../examples/plugins/wat/suffix.wat")
	v, err := c.PushPlugin(ctx, "reg", "suffix", suffix, client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil || !v.Valid {
		t.Fatalf("push suffix: %+v %v", v, err)
	}
	waitStages("rewrite suffix")

	ltr := wasmtest.GoPlugin(t, "../../examples/plugins/ltr")
	step := api.StepSpec{Config: json.RawMessage(`{"weights":{"price":-1}}`), Fields: []string{"price"}, RerankDepth: 50, BudgetMS: 2000}
	if _, err := c.PushPlugin(ctx, "reg", "ltr", ltr, client.PushOptions{Kind: "ranker", Step: step, Activate: true}); err != nil {
		t.Fatal(err)
	}
	r := waitStages("rewrite suffix,rank ltr")
	for i := 1; i < len(r.Hits); i++ {
		if r.Hits[i].Fields["price"].(float64) < r.Hits[i-1].Fields["price"].(float64) {
			t.Fatalf("the ranker did not order by price: %+v", r.Hits)
		}
	}

	before, err := c.Pipeline(ctx, "reg")
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		err  error
		code api.Code
		msg  string
	}{
		{"not wasm", func() error {
			_, err := c.PushPlugin(ctx, "reg", "junk", []byte("not wasm at all"), client.PushOptions{Kind: "rewriter"})
			return err
		}(), api.CodeBadRequest, "not a WebAssembly module"},
		{"config not JSON", func() error {
			_, err := c.PushPlugin(ctx, "reg", "suffix", suffix, client.PushOptions{Kind: "rewriter", Step: api.StepSpec{Config: json.RawMessage(`{`)}})
			return err
		}(), api.CodeBadRequest, ""},
		{"wrong kind", func() error {
			_, err := c.PushPlugin(ctx, "reg", "suffix", suffix, client.PushOptions{Kind: "ranker"})
			return err
		}(), api.CodeBadRequest, "must export quarry_rank"},
		{"unknown digest", func() error {
			_, err := c.ActivatePlugin(ctx, "reg", "suffix", "sha256:"+strings.Repeat("0", 64))
			return err
		}(), api.CodeNotFound, "has no version"},
		{"refused version", func() error {
			_, err := c.ActivatePlugin(ctx, "reg", "junk", meta.PluginDigest([]byte("not wasm at all")))
			return err
		}(), api.CodeBadRequest, "failed validation"},
		{"unknown index", func() error {
			_, err := c.PushPlugin(ctx, "nope", "suffix", suffix, client.PushOptions{Kind: "rewriter"})
			return err
		}(), api.CodeNotFound, "does not exist"},
		{"unknown plugin", func() error { _, err := c.RemovePlugin(ctx, "reg", "ghost"); return err }(), api.CodeNotFound, "not in the pipeline"},
	}
	for _, b := range bad {
		if b.err == nil || api.CodeOf(b.err) != b.code || !strings.Contains(b.err.Error(), b.msg) {
			t.Errorf("%s: got %v, want %s containing %q", b.name, b.err, b.code, b.msg)
		}
	}
	after, err := c.Pipeline(ctx, "reg")
	if err != nil || after.Revision != before.Revision {
		t.Fatalf("bad input changed the pipeline: revision %d → %d (%v)", before.Revision, after.Revision, err)
	}

	if _, err := c.RollbackPipeline(ctx, "reg"); err != nil {
		t.Fatal(err)
	}
	waitStages("rewrite suffix")
	if _, err := c.RemovePlugin(ctx, "reg", "suffix"); err != nil {
		t.Fatal(err)
	}
	waitStages("")
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d queries failed while the pipeline changed", failed.Load(), queries.Load())
	}
	t.Logf("%d queries while the pipeline changed 5 times, none failed", queries.Load())
}

// identityWAT is a rewriter that changes nothing: a second version to
// canary against the suffix rewriter.
const identityWAT = `(module (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param i32 i32) (result i64)
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// A canary takes its share of queries, sticky by user; promote makes it
// live.
func TestRegistryCanary(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "can", 1, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "can", ndjson(30, "c"))
	waitTotal(t, c, "can", "noodles", 10)
	live, err := c.PushPlugin(ctx, "can", "suffix", wasmtest.WATFile(t, "../../examples/plugins/wat/suffix.wat"), client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatal(err)
	}
	cand, err := c.PushPlugin(ctx, "can", "suffix", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter"})
	if err != nil {
		t.Fatal(err)
	}
	// version returns which version served a user's query.
	version := func(user string) string {
		r, err := c.Search(ctx, "can", &api.SearchRequest{Q: "noodles", Profile: true, Context: json.RawMessage(`{"user":"` + user + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range r.Profile.Stages {
			if st.Name == "rewrite suffix" {
				return strings.SplitN(st.Detail, ":", 2)[0]
			}
		}
		return "none"
	}
	if _, err := c.CanaryPlugin(ctx, "can", "suffix", cand.Digest, 50, "user"); err != nil {
		t.Fatal(err)
	}
	candNote := "canary " + cand.Digest[len("sha256:"):][:12]
	deadline := time.Now().Add(30 * time.Second)
	// Two rounds over 40 users: once the canary is live, about half go to
	// it, and each user gets the same version both times. (A round that
	// straddles the pipeline swap is retried.)
	for {
		canaries := 0
		sticky := true
		for u := range 40 {
			user := "u" + strconv.Itoa(u)
			v := version(user)
			if v == candNote {
				canaries++
			}
			sticky = sticky && version(user) == v
		}
		if canaries > 5 && canaries < 35 && sticky {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("canary took %d of 40 users, sticky %v", canaries, sticky)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.CanaryPlugin(ctx, "can", "suffix", "sha256:"+strings.Repeat("2", 64), 10, ""); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("canary of an unknown digest: %v", err)
	}
	spec, err := c.PromotePlugin(ctx, "can", "suffix")
	if err != nil || spec.Rewriters[0].Digest != cand.Digest || spec.Rewriters[0].Canary != nil {
		t.Fatalf("promote: %+v %v", spec, err)
	}
	for time.Now().Before(deadline) && version("anyone") != "version "+cand.Digest[len("sha256:"):][:12] {
		time.Sleep(20 * time.Millisecond)
	}
	if v := version("anyone"); v != "version "+cand.Digest[len("sha256:"):][:12] {
		t.Fatalf("after promote: %s (live was %s)", v, live.Digest)
	}
}

// A shadow ranker sees mirrored queries, never changes results, and its
// comparison with the live ranker is readable from the admin API.
func TestRegistryShadow(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c := n.Client()
	ctx := context.Background()
	loadCatalog(t, n, "sh", 1, catalogNDJSON(t, 300))
	ltr := wasmtest.GoPlugin(t, "../../examples/plugins/ltr")
	cheap := api.StepSpec{Config: json.RawMessage(`{"weights":{"price":-1}}`), Fields: []string{"price"}, RerankDepth: 30, BudgetMS: 2000}
	live, err := c.PushPlugin(ctx, "sh", "ltr", ltr, client.PushOptions{Kind: "ranker", Step: cheap, Activate: true})
	if err != nil {
		t.Fatal(err)
	}
	// The same binary, re-pushed with the opposite model, as the shadow.
	dear := cheap
	dear.Config = json.RawMessage(`{"weights":{"price":1}}`)
	if _, err := c.PushPlugin(ctx, "sh", "ltr", ltr, client.PushOptions{Kind: "ranker", Step: dear}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ShadowPlugin(ctx, "sh", "ltr", live.Digest, 100); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	var st *api.ShadowStats
	for {
		r, err := c.Search(ctx, "sh", &api.SearchRequest{Q: "pizza", Fields: []string{"price"}, Profile: true})
		if err != nil {
			t.Fatal(err)
		}
		if rewrites(r) != "rank ltr" {
			if time.Now().After(deadline) {
				t.Fatal("the pipeline with the ranker never went live")
			}
			time.Sleep(20 * time.Millisecond) // the broker has not swapped the pipeline in yet
			continue
		}
		for i := 1; i < len(r.Hits); i++ {
			if r.Hits[i].Fields["price"].(float64) < r.Hits[i-1].Fields["price"].(float64) {
				t.Fatal("the shadow changed the results")
			}
		}
		if st, err = c.ShadowStats(ctx, "sh", "ltr"); err == nil && st.Queries >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shadow stats never filled: %+v %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.RankCorrelation >= 0 || st.OverlapAt10 >= 0.5 || st.ShadowErrors != 0 || st.LiveMS <= 0 || st.ShadowMS <= 0 {
		t.Fatalf("an opposite model should disagree: %+v", st)
	}
	t.Logf("shadow: %+v", *st)
	if _, err := c.ShadowPlugin(ctx, "sh", "suffix", live.Digest, 10); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("shadow of a plugin not in the pipeline: %v", err)
	}
}

// A fail-open plugin that keeps failing is taken out automatically: later
// queries skip it without calling it, and the event is visible.
func TestAutomaticFallback(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{},
		&broker.Config{FallbackWindow: 20, FallbackMinCalls: 10})
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "fb", 1, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "fb", ndjson(30, "f"))
	waitTotal(t, c, "fb", "noodles", 10)
	trap := wasmtest.WAT(t, `(module (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param $p i32) (param i32) (result i64)
    ;; fine on validation's sample queries, a trap on any 7-byte q ("noodles")
    (if (i32.eq (i32.load (local.get $p)) (i32.const 7)) (then unreachable))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`)
	if _, err := c.PushPlugin(ctx, "fb", "flaky", trap, client.PushOptions{Kind: "rewriter", Activate: true, Step: api.StepSpec{Instances: 1}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.Search(ctx, "fb", &api.SearchRequest{Q: "noodles"})
		if err != nil {
			t.Fatalf("a fail-open plugin failed a query: %v", err)
		}
		if len(r.Pipeline) == 1 && r.Pipeline[0].Error == "taken out by the automatic fallback" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never taken out: %+v", r.Pipeline)
		}
	}
	var evs []api.PluginEvent
	for time.Now().Before(deadline) {
		var err error
		if evs, err = c.PluginEvents(ctx, "fb"); err == nil && len(evs) == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(evs) != 1 || evs[0].Plugin != "flaky" || evs[0].Event != "taken out" || !strings.Contains(evs[0].Reason, "calls failed") {
		t.Fatalf("events: %+v", evs)
	}
}
