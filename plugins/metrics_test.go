package plugins

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// The collector exports what each plugin counted: calls, errors by kind,
// the latency histogram, live instances (one made at load; calls one after
// the other reuse it; a trapped one is discarded) and their memory (as
// grown by the guest), once per index, plugin and version, and passes
// promtool's linter.
func TestCollector(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	load := func(name, body string) *Plugin {
		t.Helper()
		p, err := rt.Load(ctx, Spec{Name: name, Version: "v1", Kind: Rewriter, Instances: 2}, wasmtest.WAT(t, watPlugin("", body)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(ctx) })
		return p
	}
	ok := load("ok", okBody)
	trap := load("trap", "unreachable")
	grow := load("grow", "(drop (memory.grow (i32.const 1)))\n"+okBody) // 2 pages, one more a call
	for _, c := range []struct {
		p     *Plugin
		calls int
		fail  bool
	}{{ok, 3, false}, {trap, 1, true}, {grow, 1, false}} {
		for range c.calls {
			if _, err := c.p.Rewrite(ctx, &abi.RewriteRequest{Q: "x"}); (err != nil) != c.fail {
				t.Fatalf("%s: err %v, want failure %v", c.p.Spec().Name, err, c.fail)
			}
		}
	}
	reg := prometheus.NewPedanticRegistry() // also checks Describe against Collect
	reg.MustRegister(NewCollector(func(yield func(string, *Plugin) bool) {
		for _, p := range []*Plugin{ok, trap, grow, ok} { // ok twice: a step and its shadow
			if !yield("menu", p) {
				return
			}
		}
	}))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	const page = 65536
	tests := []struct {
		metric, plugin string
		labels         map[string]string
		want           float64
	}{
		{"quarry_plugin_calls_total", "ok", nil, 3},
		{"quarry_plugin_calls_total", "trap", nil, 1},
		{"quarry_plugin_errors_total", "trap", map[string]string{"kind": "trap"}, 1},
		{"quarry_plugin_errors_total", "trap", map[string]string{"kind": "timeout"}, 0},
		{"quarry_plugin_errors_total", "ok", map[string]string{"kind": "trap"}, 0},
		{"quarry_plugin_call_duration_seconds", "ok", nil, 3},
		{"quarry_plugin_call_duration_seconds", "grow", nil, 1},
		{"quarry_plugin_instances", "ok", nil, 1},
		{"quarry_plugin_instances", "trap", nil, 0},
		{"quarry_plugin_memory_bytes", "ok", nil, 2 * page},
		{"quarry_plugin_memory_bytes", "trap", nil, 0},
		{"quarry_plugin_memory_bytes", "grow", nil, 3 * page},
	}
	for _, tt := range tests {
		got, n := value(fams, tt.metric, "menu", tt.plugin, "v1", tt.labels)
		if n != 1 || got != tt.want {
			t.Errorf("%s{plugin=%q %v}: %g in %d series, want %g in one", tt.metric, tt.plugin, tt.labels, got, n, tt.want)
		}
	}
}

// value finds the series of a family with the given index, plugin,
// version and labels: its value (a histogram's count) and how many match.
func value(fams []*dto.MetricFamily, name, index, plugin, version string, labels map[string]string) (float64, int) {
	want := map[string]string{"index": index, "plugin": plugin, "version": version}
	for k, v := range labels {
		want[k] = v
	}
	var got float64
	n := 0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			n++
			switch {
			case m.Histogram != nil:
				got = float64(m.GetHistogram().GetSampleCount())
			case m.Counter != nil:
				got = m.GetCounter().GetValue()
			default:
				got = m.GetGauge().GetValue()
			}
		}
	}
	return got, n
}

// A plugin's pool makes Config.WarmInstances instances when it loads and
// the rest of Spec.Instances only when calls overlap: calls one after the
// other reuse one instance; three held at once fill a pool of three; a
// fourth grows past the pool (within the team's budget), for that call
// only. With WarmInstances at the pool's size, every instance is made at
// load.
func TestPoolFillsWhenCallsOverlap(t *testing.T) {
	ctx := context.Background()
	rt := testRuntime(t)
	p, err := rt.Load(ctx, Spec{Name: "ok", Version: "v1", Kind: Rewriter, Instances: 3}, wasmtest.WAT(t, watPlugin("", okBody)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if n := p.LiveInstances(); n != 1 {
		t.Fatalf("%d instances after load, want 1", n)
	}
	for range 5 {
		if _, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.LiveInstances(); n != 1 {
		t.Fatalf("%d instances after 5 calls one after the other, want 1", n)
	}
	deadline := time.Now().Add(time.Second)
	var held []*instance
	for i := range 3 {
		in, extra, _, err := p.acquire(ctx, deadline)
		if err != nil || extra {
			t.Fatalf("call %d of 3 at once: extra %v, %v", i+1, extra, err)
		}
		held = append(held, in)
	}
	if n := p.LiveInstances(); n != 3 {
		t.Fatalf("%d instances with 3 calls at once, want 3", n)
	}
	in, extra, _, err := p.acquire(ctx, deadline)
	if err != nil || !extra {
		t.Fatalf("a fourth call at once: extra %v, %v; want an instance grown for it", extra, err)
	}
	p.closeInstance(ctx, in)
	rt.release(1)
	for _, in := range held {
		p.pool <- in
	}

	eager, err := NewRuntime(ctx, Config{MemoryLimitPages: 256, WarmInstances: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close(ctx)
	q, err := eager.Load(ctx, Spec{Name: "ok", Version: "v1", Kind: Rewriter, Instances: 3}, wasmtest.WAT(t, watPlugin("", okBody)))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	if n := q.LiveInstances(); n != 3 {
		t.Fatalf("WarmInstances 8, pool of 3: %d instances after load, want 3", n)
	}
}
