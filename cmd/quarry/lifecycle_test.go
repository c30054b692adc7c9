package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// burgerWAT is a rewriter that replaces the user's text with "burger": the
// second version of the suffix rewriter, so that shadow, canary and
// promote have a real difference to show. Its response is a constant:
// status 0, flags FlagQ, length 6, "burger" (docs/plugin-abi.md).
const burgerWAT = `(module (memory 1)
  (data (i32.const 40960) "\00\01\06\00\00\00burger")
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param i32 i32) (result i64)
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 12))))`

// serveInProcess starts `quarry serve` in the test's process on a free
// NATS port and returns its URL once it answers.
func serveInProcess(t *testing.T) string {
	t.Helper()
	port := natstest.FreePort(t)
	serve := startCLI(t, "serve", "--data", t.TempDir(), "--nats-port", fmt.Sprint(port), "--http", "", "--log-level", "warn")
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	waitFor(t, time.Minute, "quarry serve to answer on "+url, func() (bool, string) {
		if !serve.running() {
			t.Fatalf("quarry serve ended:\n%s", serve.stderr)
		}
		_, errOut, code := cli(t, "", "index", "ls", "--nats", url, "--timeout", "2s")
		return code == 0, errOut
	})
	return url
}

// load searches index from workers until stop is closed, and counts.
type load struct {
	// timeout, when set, is each query's deadline, as a client with a
	// deadline of its own would give (zero: the client's default).
	timeout                   time.Duration
	queries, failed, degraded atomic.Int64
	mu                        sync.Mutex
	errs                      []string
	took                      []time.Duration
}

func (l *load) run(ctx context.Context, c *client.Client, index string, workers int) (wait func()) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				rctx := json.RawMessage(fmt.Sprintf(`{"user":"u%d"}`, (w*7919+i)%500))
				qctx, cancel := context.Background(), context.CancelFunc(func() {})
				if l.timeout > 0 {
					qctx, cancel = context.WithTimeout(qctx, l.timeout)
				}
				start := time.Now()
				r, err := c.Search(qctx, index, &api.SearchRequest{Q: "spicy noodles", Context: rctx})
				took := time.Since(start)
				cancel()
				l.queries.Add(1)
				l.mu.Lock()
				l.took = append(l.took, took)
				switch {
				case err != nil:
					l.failed.Add(1)
					l.errs = append(l.errs, err.Error())
				case r.Shards.Failed > 0:
					l.failed.Add(1)
					l.errs = append(l.errs, fmt.Sprintf("%d shards failed (shard %d: %s)", r.Shards.Failed, r.Shards.Failures[0].Shard, r.Shards.Failures[0].Reason))
				case slices.ContainsFunc(r.Pipeline, func(s api.StepReport) bool { return s.Error != "" }):
					l.degraded.Add(1)
					l.errs = append(l.errs, fmt.Sprintf("pipeline: %+v", r.Pipeline))
				}
				l.mu.Unlock()
				time.Sleep(5 * time.Millisecond) // pacing: a steady load, not a wait for a state
			}
		})
	}
	return wg.Wait
}

// mark is how many answers the load has timed so far: the start or end of
// a window for window.
func (l *load) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.took)
}

// window returns how many queries ended between two marks (to < 0: until
// now) and their p50, p99 and max latencies.
func (l *load) window(from, to int) (n int, p50, p99, max time.Duration) {
	l.mu.Lock()
	if to < 0 {
		to = len(l.took)
	}
	w := slices.Clone(l.took[from:to])
	l.mu.Unlock()
	if len(w) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(w)
	return len(w), w[len(w)/2], w[len(w)*99/100], w[len(w)-1]
}

// failures sums up a load's failed queries for a failure message.
func (l *load) failures() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts := map[string]int{}
	for _, e := range l.errs {
		counts[e]++
	}
	var out []string
	for e, n := range counts {
		out = append(out, fmt.Sprintf("%d× %s", n, e))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// TestPluginLifecycleUnderLoad is issue 5's "done when" against `quarry
// serve` (run in the test's process, as the CLI is): from the CLI a team
// pushes and validates a plugin, shadows a second version, canaries it,
// promotes it and rolls back, while queries run the whole time; none may
// fail.
func TestPluginLifecycleUnderLoad(t *testing.T) {
	// Not parallel: serve sets process-wide knobs (cmdline.Runtime.Apply
	// makes its logger the default one), and the load must overlap the
	// lifecycle (at least 200 queries), which other tests' load slows.
	url := serveInProcess(t)
	nf := []string{"--nats", url}
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs.ndjson")
	var buf bytes.Buffer
	catalog.WriteNDJSON(&buf, catalog.Generate(catalog.DefaultSeed, 500))
	os.WriteFile(docs, buf.Bytes(), 0o644)
	v1, v2 := filepath.Join(dir, "suffix.wasm"), filepath.Join(dir, "burger.wasm")
	os.WriteFile(v1, wasmtest.WATFile(t, "../../examples/plugins/wat/suffix.wat"), 0o644)
	os.WriteFile(v2, wasmtest.WAT(t, burgerWAT), 0o644)

	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := cli(t, "", append(args, nf...)...)
		if code != 0 {
			t.Fatalf("quarry %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	run("index", "create", "lc", "--shards", "2")
	run("ingest", "lc", docs, "--quiet")

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(context.Background(), nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var l load
	wait := l.run(ctx, c, "lc", 2)
	defer func() { stop(); wait() }()

	digest := regexp.MustCompile(`sha256:[0-9a-f]{64}`)
	d1 := digest.FindString(run("plugin", "push", "lc", "suffix", v1, "--kind", "rewriter", "--activate"))
	d2 := digest.FindString(run("plugin", "push", "lc", "suffix", v2, "--kind", "rewriter"))
	if d1 == "" || d2 == "" || d1 == d2 {
		t.Fatalf("digests %q and %q", d1, d2)
	}
	// settled waits until every broker runs the pipeline as changed by
	// what, and the load has had answers since.
	settled := func(what string) {
		t.Helper()
		waitFor(t, 30*time.Second, "every broker to run the pipeline after "+what, func() (bool, string) {
			out := run("pipeline", "show", "lc")
			return strings.Contains(out, "brokers: all "), out
		})
		from := l.mark()
		waitFor(t, 30*time.Second, "20 answers to the load after "+what, func() (bool, string) {
			return l.mark()-from >= 20, fmt.Sprintf("%d answers", l.mark()-from)
		})
	}
	// Shadow: the candidate runs on mirrored queries; the stats show it.
	run("plugin", "shadow", "lc", "suffix", d2, "--percent", "100")
	var st api.ShadowStats
	waitFor(t, 30*time.Second, "the shadow to compare 20 queries", func() (bool, string) {
		out := run("plugin", "shadow-stats", "lc", "suffix", "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("shadow-stats --json: %v\n%s", err, out)
		}
		return st.Queries >= 20, out
	})
	if st.OverlapAt10 > 0.5 || st.ShadowErrors > 0 {
		t.Fatalf("the shadow searches for burgers, yet overlap@10 is %.3f (shadow errors %d)", st.OverlapAt10, st.ShadowErrors)
	}
	run("plugin", "shadow", "lc", "suffix", d2, "--percent", "0")
	// Canary, sticky by user, then promote.
	run("plugin", "canary", "lc", "suffix", d2, "--percent", "30", "--sticky", "user")
	settled("the canary")
	run("plugin", "promote", "lc", "suffix")
	settled("the promotion")
	if out := run("plugin", "show", "lc", "suffix"); !strings.Contains(out, d2[7:19]) {
		t.Fatalf("after promote the live version is not %s:\n%s", d2[:19], out)
	}
	// Roll back to the pipeline before the promotion, then before the
	// canary: v1 alone is live again.
	run("plugin", "rollback", "lc")
	run("plugin", "rollback", "lc")
	settled("the rollbacks")
	var spec api.PipelineSpec
	if err := json.Unmarshal([]byte(run("pipeline", "show", "lc", "--json")), &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec.Rewriters) != 1 || spec.Rewriters[0].Digest != d1 || spec.Rewriters[0].Canary != nil {
		t.Fatalf("after two rollbacks: %+v, want %s alone", spec.Rewriters, d1[:19])
	}
	if out := run("plugin", "events", "lc"); strings.Contains(out, "taken out") || strings.Contains(out, "rolled back") {
		t.Fatalf("the platform acted on its own during a clean lifecycle:\n%s", out)
	}
	stop()
	wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.took)
	q := l.queries.Load()
	t.Logf("%d queries during the lifecycle: %d failed, %d degraded; p50 %s, p99 %s, max %s", q, l.failed.Load(), l.degraded.Load(),
		l.took[len(l.took)/2], l.took[len(l.took)*99/100], l.took[len(l.took)-1])
	if l.failed.Load() > 0 || l.degraded.Load() > 0 {
		t.Fatalf("%d failed and %d degraded queries, e.g. %v", l.failed.Load(), l.degraded.Load(), l.errs[:min(3, len(l.errs))])
	}
	if q < 200 {
		t.Fatalf("only %d queries ran: the load did not overlap the lifecycle", q)
	}
}
