package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/quarrysearch/quarry/internal/testwait"
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
	t.Parallel()
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
	// waitStages waits until the broker runs the stored pipeline and
	// checks that a query goes through want.
	waitStages := func(want string) *api.SearchResponse {
		t.Helper()
		// Generous: compiling a Go plugin under -race on a busy machine is slow.
		waitLive(t, 3*time.Minute, n.Broker, c, "reg")
		r, err := c.Search(ctx, "reg", &api.SearchRequest{Q: "pizza", Profile: true, Fields: []string{"price"}})
		if err != nil || rewrites(r) != want {
			t.Fatalf("the live pipeline's stages are not %q: %v %v", want, r, err)
		}
		return r
	}

	suffix := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
	v, err := c.PushPlugin(ctx, "reg", "suffix", suffix, client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil || !v.Valid {
		t.Fatalf("push suffix: %+v %v", v, err)
	}
	waitStages("rewrite suffix")

	ltr := wasmtest.GoPlugin(t, "../examples/plugins/ltr")
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
		{"rewrites to a query that is not JSON", func() error {
			_, err := c.PushPlugin(ctx, "reg", "broken", wasmtest.WAT(t, notJSONQueryWAT), client.PushOptions{Kind: "rewriter"})
			return err
		}(), api.CodeBadRequest, "rewritten query is not JSON"},
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
		{"latency budget over the budget", func() error {
			_, err := c.PushPlugin(ctx, "reg", "suffix", suffix, client.PushOptions{Kind: "rewriter", Step: api.StepSpec{BudgetMS: 5, LatencyBudgetMS: 10}})
			return err
		}(), api.CodeBadRequest, "latency_budget_ms (10) must not be above budget_ms (5)"},
		{"negative latency budget", func() error {
			_, err := c.PushPlugin(ctx, "reg", "suffix", suffix, client.PushOptions{Kind: "rewriter", Step: api.StepSpec{LatencyBudgetMS: -1}})
			return err
		}(), api.CodeBadRequest, "latency_budget_ms must be >= 0"},
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

// notJSONQueryWAT is a rewriter whose every answer sets the query to
// "{": production skips such an answer, so validation refuses the version.
const notJSONQueryWAT = `(module (memory 1)
  (data (i32.const 40960) "\00\02\01\00\00\00{")
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param i32 i32) (result i64)
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 7))))`

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
	noodleIndex(t, c, "can", "c")
	live, err := c.PushPlugin(ctx, "can", "suffix", wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat"), client.PushOptions{Kind: "rewriter", Activate: true})
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
	canary, err := c.CanaryPlugin(ctx, "can", "suffix", cand.Digest, 50, "user")
	if err != nil {
		t.Fatal(err)
	}
	waitRevision(t, 30*time.Second, n.Broker, "can", canary.Revision)
	candNote := "canary " + cand.Digest[len("sha256:"):][:12]
	// Two rounds over 40 users: the canary is live, about half go to it,
	// and each user gets the same version both times.
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
	if canaries <= 5 || canaries >= 35 || !sticky {
		t.Fatalf("canary took %d of 40 users, sticky %v", canaries, sticky)
	}
	if _, err := c.CanaryPlugin(ctx, "can", "suffix", "sha256:"+strings.Repeat("2", 64), 10, ""); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("canary of an unknown digest: %v", err)
	}
	// The live version against itself compares nothing: refused, saying so.
	if _, err := c.CanaryPlugin(ctx, "can", "suffix", live.Digest, 10, ""); api.CodeOf(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "is the live version of suffix, with the same settings") {
		t.Fatalf("canary of the live version: %v", err)
	}
	spec, err := c.PromotePlugin(ctx, "can", "suffix")
	if err != nil || spec.Rewriters[0].Digest != cand.Digest || spec.Rewriters[0].Canary != nil {
		t.Fatalf("promote: %+v %v", spec, err)
	}
	waitRevision(t, 30*time.Second, n.Broker, "can", spec.Revision)
	if v := version("anyone"); v != "version "+cand.Digest[len("sha256:"):][:12] {
		t.Fatalf("after promote: %s (live was %s)", v, live.Digest)
	}
}

// A shadow ranker sees mirrored queries, never changes results, and its
// comparison with the live ranker is readable from the admin API; so is a
// shadow rewriter's, whose requests run the rest of the search again.
func TestRegistryShadow(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c := n.Client()
	ctx := context.Background()
	loadCatalog(t, n, "sh", 1, catalogNDJSON(t, 300))
	ltr := wasmtest.GoPlugin(t, "../examples/plugins/ltr")
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
	shadow, err := c.ShadowPlugin(ctx, "sh", "ltr", live.Digest, 100)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	waitRevision(t, time.Until(deadline), n.Broker, "sh", shadow.Revision)
	// Each look is a query (a shadow finding the broker busy is dropped):
	// until the broker has published 10 compared ones.
	var st *api.ShadowStats
	testwait.UntilErr(t, time.Until(deadline), "shadow stats of 10 queries", func() error {
		r, err := c.Search(ctx, "sh", &api.SearchRequest{Q: "pizza", Fields: []string{"price"}, Profile: true})
		if err != nil {
			t.Fatal(err)
		}
		if rewrites(r) != "rank ltr" {
			t.Fatalf("the live pipeline has no ranker: %+v", r.Profile.Stages)
		}
		for i := 1; i < len(r.Hits); i++ {
			if r.Hits[i].Fields["price"].(float64) < r.Hits[i-1].Fields["price"].(float64) {
				t.Fatal("the shadow changed the results")
			}
		}
		if st, err = c.ShadowStats(ctx, "sh", "ltr"); err != nil {
			return err
		}
		if st.Queries < 10 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	if st.RankCorrelation >= 0 || st.OverlapAt10 >= 0.5 || st.ShadowErrors != 0 || st.LiveMS <= 0 || st.ShadowMS <= 0 {
		t.Fatalf("an opposite model should disagree: %+v", st)
	}
	t.Logf("shadow: %+v", *st)
	if _, err := c.ShadowPlugin(ctx, "sh", "suffix", live.Digest, 10); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("shadow of a plugin not in the pipeline: %v", err)
	}

	// Rewriters: on "sh" the shadow search also runs the live ltr ranker.
	suffix, identity := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat"), wasmtest.WAT(t, identityWAT)
	noodleIndex(t, c, "rws", "w")
	rewriters := []struct {
		name, index, q string
		live, cand     []byte
		fields         []string
		lo, hi         float64 // overlap@10 wanted
	}{
		// "soup": 20 documents score alike; " spicy" puts the 10 spicy soups first.
		{"a different candidate", "rws", "soup", identity, suffix, nil, 0.3, 0.7},
		{"the live version itself", "sh", "pizza", suffix, suffix, []string{"price"}, 1, 1},
	}
	for _, tc := range rewriters {
		t.Run("rewriter: "+tc.name, func(t *testing.T) {
			lv, err := c.PushPlugin(ctx, tc.index, "rw", tc.live, client.PushOptions{Kind: "rewriter", Activate: true})
			if err != nil {
				t.Fatal(err)
			}
			cand, err := c.PushPlugin(ctx, tc.index, "rw", tc.cand, client.PushOptions{Kind: "rewriter"})
			if err != nil {
				t.Fatal(err)
			}
			shadow, err := c.ShadowPlugin(ctx, tc.index, "rw", cand.Digest, 100)
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(time.Minute)
			waitRevision(t, time.Until(deadline), n.Broker, tc.index, shadow.Revision)
			// Each look is a query, until 10 compared ones are published.
			var st *api.ShadowStats
			testwait.UntilErr(t, time.Until(deadline), "shadow stats of 10 queries", func() error {
				r, err := c.Search(ctx, tc.index, &api.SearchRequest{Q: tc.q, Fields: tc.fields, Profile: true})
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range r.Profile.Stages {
					if s.Name == "rewrite rw" && !strings.HasPrefix(s.Detail, "version "+short(lv.Digest)) {
						t.Fatalf("the shadow answered a query: %s", s.Detail)
					}
				}
				if st, err = c.ShadowStats(ctx, tc.index, "rw"); err != nil {
					return err
				}
				if st.Queries < 10 {
					return fmt.Errorf("%+v", st)
				}
				return nil
			})
			if st.OverlapAt10 < tc.lo || st.OverlapAt10 > tc.hi || st.ShadowErrors != 0 || st.LiveErrors != 0 || st.LiveMS <= 0 || st.ShadowMS <= 0 ||
				(tc.lo == 1 && st.RankCorrelation != 1) {
				t.Fatalf("overlap@10 should be in [%v, %v] (rank correlation 1 if identical): %+v", tc.lo, tc.hi, st)
			}
			t.Logf("rewriter shadow: %+v", *st)
		})
	}
}

// trapWAT is a rewriter that passes validation's sample queries and traps
// on any 7-byte q ("noodles").
const trapWAT = `(module (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param $p i32) (param i32) (result i64)
    (if (i32.eq (i32.load (local.get $p)) (i32.const 7)) (then unreachable))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// slowWAT is a rewriter that changes nothing and, on any 7-byte q
// ("noodles"), first spins for several milliseconds (about 9 on a 2-core
// test machine).
const slowWAT = `(module (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param $p i32) (param i32) (result i64)
    (local $i i32)
    (if (i32.eq (i32.load (local.get $p)) (i32.const 7))
      (then
        (local.set $i (i32.const 20000000))
        (loop $spin
          (local.set $i (i32.sub (local.get $i) (i32.const 1)))
          (br_if $spin (local.get $i)))))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// pluginEvent returns the first of index's plugin events named name.
func pluginEvent(c *client.Client, index, name string) (api.PluginEvent, bool) {
	evs, _ := c.PluginEvents(context.Background(), index)
	for _, ev := range evs {
		if ev.Event == name {
			return ev, true
		}
	}
	return api.PluginEvent{}, false
}

// waitTakenOut waits until the index's stored pipeline records that the
// fallback took plugin out, and returns that pipeline.
func waitTakenOut(t *testing.T, c *client.Client, index, plugin string) *api.PipelineSpec {
	t.Helper()
	var spec *api.PipelineSpec
	testwait.UntilErr(t, 30*time.Second, fmt.Sprintf("the pipeline of %s records %s as taken out", index, plugin), func() error {
		got, err := c.Pipeline(context.Background(), index)
		if err != nil {
			return err
		}
		for _, st := range got.Rewriters {
			if st.Plugin == plugin && st.TakenOut != nil {
				spec = got
				return nil
			}
		}
		return fmt.Errorf("%+v", got)
	})
	return spec
}

// waitRevision waits until broker b runs revision rev (or a later one) of
// the index's pipeline: the revision an admin call returned as stored.
// The broker records it after it swapped that pipeline in.
func waitRevision(t testing.TB, timeout time.Duration, b *broker.Broker, index string, rev uint64) {
	t.Helper()
	testwait.UntilErr(t, timeout, fmt.Sprintf("the broker runs revision %d of the pipeline of %s", rev, index), func() error {
		if got := b.PipelineStatus().Revisions[index]; got < rev {
			return fmt.Errorf("it runs revision %d", got)
		}
		return nil
	})
}

// waitLive waits until broker b runs the index's stored pipeline (or a
// later one) and returns the stored pipeline.
func waitLive(t testing.TB, timeout time.Duration, b *broker.Broker, c *client.Client, index string) *api.PipelineSpec {
	t.Helper()
	spec, err := c.Pipeline(context.Background(), index)
	if err != nil {
		t.Fatalf("the pipeline of %s: %v", index, err)
	}
	waitRevision(t, timeout, b, index, spec.Revision)
	return spec
}

// waitPipelineRevision waits until the node's broker runs revision rev
// (or later) of the index's pipeline.
func waitPipelineRevision(t *testing.T, n *Node, index string, rev uint64) {
	t.Helper()
	waitRevision(t, 30*time.Second, n.Broker, index, rev)
}

// waitEvent waits until index has a plugin event named name and returns
// it.
func waitEvent(t *testing.T, c *client.Client, index, name string) api.PluginEvent {
	t.Helper()
	var ev api.PluginEvent
	testwait.UntilErr(t, 30*time.Second, fmt.Sprintf("a %q event on %s", name, index), func() error {
		var ok bool
		if ev, ok = pluginEvent(c, index, name); ok {
			return nil
		}
		evs, err := c.PluginEvents(context.Background(), index)
		return fmt.Errorf("%+v %v", evs, err)
	})
	return ev
}

// short is a digest as the broker names a version.
func short(digest string) string { return strings.TrimPrefix(digest, "sha256:")[:12] }

// The automatic fallback, on one stack: a fail-open plugin that keeps
// failing, or whose calls keep going over its latency budget, is taken
// out (later queries skip it); a fail-closed one is rolled back to its
// last good version, or, with none, left failing closed; every time the
// event is visible.
func TestAutomaticFallback(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{},
		&broker.Config{FallbackWindow: 20, FallbackMinCalls: 10, FallbackSlowRate: 0.2})
	c := n.Client()
	ctx := context.Background()
	trap, slow := wasmtest.WAT(t, trapWAT), wasmtest.WAT(t, slowWAT)

	// Fail-open: queries never fail; once taken out, the step is skipped.
	takenOut := []struct {
		name, index string
		wasm        []byte
		step        api.StepSpec
		reason      string
	}{
		{"errors", "fb", trap, api.StepSpec{Instances: 1}, "calls failed"},
		{"latency budget", "slow", slow, api.StepSpec{Instances: 1, BudgetMS: 2000, LatencyBudgetMS: 2},
			"calls took longer than its 2ms latency budget (threshold 20%)"},
	}
	for _, tc := range takenOut {
		t.Run("fail-open "+tc.name, func(t *testing.T) {
			noodleIndex(t, c, tc.index, "f")
			if _, err := c.PushPlugin(ctx, tc.index, "flaky", tc.wasm, client.PushOptions{Kind: "rewriter", Activate: true, Step: tc.step}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				r, err := c.Search(ctx, tc.index, &api.SearchRequest{Q: "noodles"})
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
			ev := waitEvent(t, c, tc.index, "taken out")
			if ev.Plugin != "flaky" || !strings.Contains(ev.Reason, tc.reason) {
				t.Fatalf("event: %+v, want a reason with %q", ev, tc.reason)
			}
			t.Logf("event: %s", ev.Reason)
			// The pipeline says so, and a revision written for another
			// reason keeps the step out.
			waitTakenOut(t, c, tc.index, "flaky")
			if _, err := c.PushPlugin(ctx, tc.index, "other", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter", Activate: true}); err != nil {
				t.Fatal(err)
			}
			spec := waitTakenOut(t, c, tc.index, "flaky")
			if len(spec.Rewriters) != 2 || spec.Rewriters[1].Plugin != "other" {
				t.Fatalf("activate did not add the step: %+v", spec.Rewriters)
			}
			waitPipelineRevision(t, n, tc.index, spec.Revision)
			r, err := c.Search(ctx, tc.index, &api.SearchRequest{Q: "noodles"})
			if err != nil || len(r.Pipeline) != 1 || r.Pipeline[0].Plugin != "flaky" || r.Pipeline[0].Error != "taken out by the automatic fallback" {
				t.Fatalf("after another plugin was activated, the taken-out one came back: %v %+v", err, r)
			}
			// Activating a version of it puts it back.
			spec, err = c.ActivatePlugin(ctx, tc.index, "flaky", short(spec.Rewriters[0].Digest))
			if err != nil || spec.Rewriters[0].TakenOut != nil {
				t.Fatalf("activate again: %v %+v", err, spec)
			}
		})
	}

	// Variant searches (replays, evaluations' candidates) have the
	// fallback too (issue 34): a version failing in every one of them is
	// refused in them after the window's calls, rather than costing a
	// call each time; the live pipeline is not touched.
	t.Run("variants", func(t *testing.T) {
		noodleIndex(t, c, "vf", "v")
		v, err := c.PushPlugin(ctx, "vf", "flaky", trap, client.PushOptions{Kind: "rewriter", Step: api.StepSpec{Instances: 1}})
		if err != nil {
			t.Fatal(err)
		}
		req := func() (*api.SearchResponse, error) {
			return c.Search(ctx, "vf", &api.SearchRequest{Q: "noodles", Variant: &api.Variant{Plugin: "flaky", Digest: v.Digest}})
		}
		calls := 0
		for ; ; calls++ {
			r, err := req()
			if err != nil {
				if !errors.Is(err, api.ErrUnavailable) || !strings.Contains(err.Error(), "taken out of variant searches by the automatic fallback") || !strings.Contains(err.Error(), "calls failed") {
					t.Fatalf("after %d variant searches: %v", calls, err)
				}
				t.Logf("after %d variant searches: %v", calls, err)
				break
			}
			if len(r.Pipeline) != 1 || r.Pipeline[0].Status != "skipped" {
				t.Fatalf("variant search %d: the failing version's report %+v", calls, r.Pipeline)
			}
			if calls > 20 {
				t.Fatal("a version failing in every variant search was called in each of 20 (the fallback window): never refused")
			}
		}
		if calls != 10 { // FallbackMinCalls
			t.Fatalf("refused after %d calls, want 10 (the fallback's min calls)", calls)
		}
		// Refused at once from then on, and nothing written: no event,
		// no pipeline.
		if _, err := req(); !errors.Is(err, api.ErrUnavailable) {
			t.Fatalf("the next variant search: %v", err)
		}
		if evs, err := c.PluginEvents(ctx, "vf"); err != nil || len(evs) != 0 {
			t.Fatalf("events: %v %+v, want none", err, evs)
		}
		if l, err := c.Plugins(ctx, "vf"); err != nil || l.Pipeline != nil && len(l.Pipeline.Rewriters) != 0 {
			t.Fatalf("pipeline: %v %+v, want none", err, l.Pipeline)
		}
	})

	// Fail-closed: queries fail while the failing version is live.
	failClosed := api.StepSpec{Policy: "fail-closed", Instances: 1}
	t.Run("fail-closed rolls back to the last good version", func(t *testing.T) {
		noodleIndex(t, c, "fc", "c")
		good, err := c.PushPlugin(ctx, "fc", "flaky", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter", Activate: true, Step: failClosed})
		if err != nil {
			t.Fatal(err)
		}
		bad, err := c.PushPlugin(ctx, "fc", "flaky", trap, client.PushOptions{Kind: "rewriter", Activate: true, Step: failClosed})
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		deadline := time.Now().Add(30 * time.Second)
		for _, ok := pluginEvent(c, "fc", "rolled back"); !ok; _, ok = pluginEvent(c, "fc", "rolled back") {
			if _, err := c.Search(ctx, "fc", &api.SearchRequest{Q: "noodles"}); err != nil {
				failed++
			}
			if time.Now().After(deadline) {
				t.Fatalf("never rolled back (%d queries failed)", failed)
			}
		}
		ev := waitEvent(t, c, "fc", "rolled back")
		if want := "rolled back from " + short(bad.Digest) + " to " + short(good.Digest); ev.Plugin != "flaky" || ev.Version != short(bad.Digest) ||
			!strings.Contains(ev.Reason, "calls failed") || !strings.Contains(ev.Reason, want) {
			t.Fatalf("event: %+v, want a reason with %q", ev, want)
		}
		spec, err := c.Pipeline(ctx, "fc")
		if err != nil || len(spec.Rewriters) != 1 || spec.Rewriters[0].Digest != good.Digest || spec.Rewriters[0].Policy != "fail-closed" {
			t.Fatalf("pipeline after the rollback: %+v %v", spec, err)
		}
		// Once the broker swaps the rollback in, queries run the good version.
		waitRevision(t, time.Until(deadline), n.Broker, "fc", spec.Revision)
		r, err := c.Search(ctx, "fc", &api.SearchRequest{Q: "noodles", Profile: true})
		if err != nil {
			t.Fatalf("a query fails after the rollback: %v", err)
		}
		for _, st := range r.Profile.Stages {
			if st.Name == "rewrite flaky" && !strings.HasPrefix(st.Detail, "version "+short(good.Digest)) {
				t.Fatalf("after the rollback: %+v", st)
			}
		}
		if rewrites(r) != "rewrite flaky" {
			t.Fatalf("after the rollback: %+v", r.Profile.Stages)
		}
		for range 20 {
			if _, err := c.Search(ctx, "fc", &api.SearchRequest{Q: "noodles"}); err != nil {
				t.Fatalf("a query failed after the rollback: %v", err)
			}
		}
		t.Logf("%d queries failed closed before the rollback; event: %s", failed, ev.Reason)
	})

	t.Run("fail-closed with nothing to roll back to", func(t *testing.T) {
		noodleIndex(t, c, "fc0", "z")
		if _, err := c.PushPlugin(ctx, "fc0", "flaky", trap, client.PushOptions{Kind: "rewriter", Activate: true, Step: failClosed}); err != nil {
			t.Fatal(err)
		}
		before, err := c.Pipeline(ctx, "fc0")
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, ok := pluginEvent(c, "fc0", "not rolled back"); !ok; _, ok = pluginEvent(c, "fc0", "not rolled back") {
			c.Search(ctx, "fc0", &api.SearchRequest{Q: "noodles"})
			if time.Now().After(deadline) {
				t.Fatal("no event")
			}
		}
		ev := waitEvent(t, c, "fc0", "not rolled back")
		if !strings.Contains(ev.Reason, "calls failed") || !strings.Contains(ev.Reason, "no earlier version") || !strings.Contains(ev.Reason, "keep failing closed") {
			t.Fatalf("event: %+v", ev)
		}
		if _, err := c.Search(ctx, "fc0", &api.SearchRequest{Q: "noodles"}); api.CodeOf(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "fail-closed") {
			t.Fatalf("the step should still fail closed: %v", err)
		}
		if spec, err := c.Pipeline(ctx, "fc0"); err != nil || spec.Revision != before.Revision {
			t.Fatalf("the pipeline changed: revision %d → %+v %v", before.Revision, spec, err)
		}
	})
}
