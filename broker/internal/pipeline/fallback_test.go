package pipeline

import (
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/plugins"
)

// A step trips the fallback once, on the call that takes the share of
// failures, or of calls over the latency budget, past the threshold, and
// only once the window holds enough calls; recording does not allocate.
func TestHealthTrips(t *testing.T) {
	type call struct{ failed, slow bool }
	repeat := func(n int, c call) []call {
		out := make([]call, n)
		for i := range out {
			out[i] = c
		}
		return out
	}
	// The broker's defaults: error rate 0.5, slow rate 0.01.
	p99 := NewFallbackLimits(0.5, 0.01, 100, 20)
	smallLim := NewFallbackLimits(0.5, 0.01, 20, 10)
	if p99.minSlowCalls != 100 || smallLim.minSlowCalls != 20 {
		t.Fatalf("a 1%% slow rate needs %d calls in a window of 100, %d in 20; want 100 and 20", p99.minSlowCalls, smallLim.minSlowCalls)
	}
	cases := []struct {
		name      string
		window    int
		lim       FallbackLimits
		calls     []call
		wantCause tripCause
		wantAt    int // the call (1-based) that trips; 0: none
		wantCount int
	}{
		{"errors after min calls", 100, p99, repeat(30, call{failed: true}), tripErrors, 20, 20},
		{"half failing is not over half", 100, p99, append(repeat(20, call{}), repeat(20, call{failed: true})...), notTripped, 0, 0},
		{"one slow call in 100 is p99", 100, p99, append(repeat(99, call{}), call{slow: true}), notTripped, 0, 0},
		{"two slow calls in 100 trip", 100, p99, append(append(repeat(98, call{}), call{slow: true}), call{slow: true}, call{}), tripLatency, 100, 2},
		{"slow calls wait for enough calls", 100, p99, repeat(50, call{slow: true}), notTripped, 0, 0},
		{"a small window caps the calls needed", 20, smallLim,
			repeat(25, call{slow: true}), tripLatency, 20, 20},
		{"errors win over latency", 20, FallbackLimits{errorRate: 0.5, slowRate: 0.2, minCalls: 10, minSlowCalls: 10},
			repeat(12, call{failed: true, slow: true}), tripErrors, 10, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHealth(c.window)
			at := 0
			for i, cl := range c.calls {
				cause, count, _ := h.record(cl.failed, cl.slow, &c.lim)
				if cause == notTripped {
					continue
				}
				if at != 0 {
					t.Fatalf("tripped twice: calls %d and %d", at, i+1)
				}
				at = i + 1
				if cause != c.wantCause || count != c.wantCount {
					t.Fatalf("call %d tripped with cause %d count %d, want cause %d count %d", at, cause, count, c.wantCause, c.wantCount)
				}
			}
			if at != c.wantAt {
				t.Fatalf("tripped at call %d, want %d", at, c.wantAt)
			}
		})
	}
	h := newHealth(100)
	if n := testing.AllocsPerRun(1000, func() { h.record(false, true, &p99) }); n != 0 {
		t.Fatalf("recording a call allocates %v times", n)
	}
}

// LastGood restores the plugin's step from the most recent earlier
// revision with another digest, ends a failing canary, and says when there
// is nothing to do.
func TestLastGood(t *testing.T) {
	d := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	step := func(name, digest, config string) api.StepSpec {
		return api.StepSpec{Plugin: name, Digest: digest, Config: []byte(config), Policy: "fail-closed"}
	}
	rev := func(n uint64, rewriters ...api.StepSpec) *api.PipelineSpec {
		return &api.PipelineSpec{Index: "i", Revision: n, Rewriters: rewriters}
	}
	withCanary := func(s api.StepSpec, c api.StepSpec) api.StepSpec {
		s.Canary = &api.CanarySpec{Step: c, Percent: 10}
		return s
	}
	cases := []struct {
		name    string
		hist    []*api.PipelineSpec // the last is the current one
		version string
		want    RollbackOutcome
		wantRW  *api.StepSpec // the plugin's step after
		wantAt  uint64
	}{
		{"restores the most recent other digest, with its settings",
			[]*api.PipelineSpec{
				rev(1, step("p", d("a"), `{"v":1}`)),
				rev(2, step("p", d("b"), `{"v":2}`)),
				rev(3, step("p", d("c"), `{"v":3}`)),
				rev(4, step("p", d("c"), `{"v":4}`), step("q", d("e"), "")),
			}, api.ShortDigest(d("c")), Restored, &api.StepSpec{Plugin: "p", Digest: d("b"), Config: []byte(`{"v":2}`), Policy: "fail-closed"}, 2},
		{"skips revisions without the plugin",
			[]*api.PipelineSpec{
				rev(1, step("p", d("a"), "")),
				rev(2),
				rev(3, step("p", d("b"), "")),
			}, api.ShortDigest(d("b")), Restored, &api.StepSpec{Plugin: "p", Digest: d("a"), Policy: "fail-closed"}, 1},
		{"keeps the live step's canary",
			[]*api.PipelineSpec{
				rev(1, step("p", d("a"), "")),
				rev(2, withCanary(step("p", d("b"), ""), step("p", d("e"), ""))),
			}, api.ShortDigest(d("b")), Restored, func() *api.StepSpec { s := withCanary(step("p", d("a"), ""), step("p", d("e"), "")); return &s }(), 1},
		{"a failing canary ends",
			[]*api.PipelineSpec{
				rev(1, withCanary(step("p", d("a"), ""), step("p", d("b"), ""))),
			}, api.ShortDigest(d("b")), CanaryEnded, &api.StepSpec{Plugin: "p", Digest: d("a"), Policy: "fail-closed"}, 0},
		{"no earlier version",
			[]*api.PipelineSpec{
				rev(1, step("p", d("a"), `{"v":1}`)),
				rev(2, step("p", d("a"), `{"v":2}`)),
			}, api.ShortDigest(d("a")), NoEarlierVersion, nil, 0},
		{"the version is gone already",
			[]*api.PipelineSpec{
				rev(1, step("p", d("a"), "")),
				rev(2, step("p", d("b"), "")),
				rev(3, step("p", d("a"), "")),
			}, api.ShortDigest(d("b")), VersionGone, nil, 0},
		{"the plugin is gone",
			[]*api.PipelineSpec{rev(1, step("p", d("a"), "")), rev(2)}, api.ShortDigest(d("a")), VersionGone, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := *c.hist[len(c.hist)-1]
			cur.Rewriters = append([]api.StepSpec(nil), cur.Rewriters...)
			r := LastGood(&cur, c.hist, plugins.Rewriter, "p", c.version)
			if r.Outcome != c.want || r.At != c.wantAt {
				t.Fatalf("outcome %d from revision %d, want %d from %d", r.Outcome, r.At, c.want, c.wantAt)
			}
			if c.wantRW == nil {
				return
			}
			got := cur.StepOf(plugins.Rewriter, "p")
			if got.Digest != c.wantRW.Digest || string(got.Config) != string(c.wantRW.Config) || (got.Canary == nil) != (c.wantRW.Canary == nil) ||
				r.From != c.version || r.To != api.ShortDigest(c.wantRW.Digest) {
				t.Fatalf("step after: %+v (from %s to %s), want %+v", got, r.From, r.To, c.wantRW)
			}
			if other := cur.StepOf(plugins.Rewriter, "q"); len(c.hist[len(c.hist)-1].Rewriters) > 1 && other == nil {
				t.Fatal("another plugin's step was lost")
			}
		})
	}
}
