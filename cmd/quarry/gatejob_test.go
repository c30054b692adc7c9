package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/httpapi"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/node"
	"github.com/quarrysearch/quarry/searcher"
)

// bigList makes a judgement list of copies times list's queries: each
// copy's lines carry a context of their own (which the rankers ignore),
// so none is a duplicate and every copy scores as the original.
func bigList(t *testing.T, list []byte, copies int) []byte {
	t.Helper()
	var out bytes.Buffer
	for i := range copies {
		for line := range bytes.Lines(list) {
			var q map[string]any
			if err := json.Unmarshal(line, &q); err != nil {
				t.Fatal(err)
			}
			q["context"] = map[string]int{"copy": i}
			b, _ := json.Marshal(q)
			out.Write(append(b, '\n'))
		}
	}
	return out.Bytes()
}

// gateSetup makes relevanceIndex's index on a node tuned by tune (each
// shard request delayed by delay, so that a gate takes its time), a
// judgement list of queries queries and a gate on it, and pushes the
// boost ranker (better than the live order) and the worse one as
// versions of plugin boost. It returns the NATS URL, the client and the
// two versions' digests.
func gateSetup(t *testing.T, index string, queries int, delay time.Duration, tune func(*node.Config)) (url string, c *client.Client, good, bad string) {
	t.Helper()
	url, c = clusterWith(t, true, func(cfg *node.Config) {
		cfg.Searcher = &searcher.Config{FaultDelay: delay, FaultEvery: 1}
		tune(cfg)
	})
	ctx := context.Background()
	list := relevanceIndex(t, c, index)
	if _, err := c.PushJudgements(ctx, index, "big", bigList(t, list, queries/10)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetGate(ctx, index, &api.Gate{Sets: []string{"big"}, Metric: "ndcg", K: 10, MaxDrop: 0.01, Confidence: 0.95}); err != nil {
		t.Fatal(err)
	}
	step := api.StepSpec{Config: json.RawMessage(`{"field":"rating","weight":10}`), Fields: []string{"rating"}, RerankDepth: 50}
	g, err := c.PushPlugin(ctx, index, "boost", wasmtest.C(t, "../../examples/plugins/c/ranker.c"), client.PushOptions{Kind: "ranker", Step: step})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.PushPlugin(ctx, index, "boost", wasmtest.C(t, "testdata/worse.c"), client.PushOptions{Kind: "ranker", Step: step})
	if err != nil {
		t.Fatal(err)
	}
	return url, c, g.Digest, b.Digest
}

// gateEvent returns the index's latest plugin event named event.
func gateEvent(t *testing.T, c *client.Client, index, event string) *api.PluginEvent {
	t.Helper()
	evs, err := c.PluginEvents(context.Background(), index)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Event == event {
			return &evs[i]
		}
	}
	return nil
}

// versionGate returns what the gate recorded with a version.
func versionGate(t *testing.T, c *client.Client, index, digest string) *api.GateResult {
	t.Helper()
	l, err := c.Plugins(context.Background(), index)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range l.Versions {
		if v.Digest == digest {
			return v.Gate
		}
	}
	t.Fatalf("no version %s", digest)
	return nil
}

// A gate over a large judgement list runs in the background: the
// activation answers gate_running at once (--gate-wait), the CLI says
// how far the gate got and waits, Ctrl-C stops only the waiting, the
// progress shows in plugin ls and show and rises, another gated change
// of the index meanwhile is refused naming it, and the version goes live
// by itself once the gate passes, recorded with the version and as a
// plugin event. Then a worse version, waited for by the CLI to the end,
// is refused with the figures, recorded, and nothing changes.
func TestGateInBackground(t *testing.T) {
	t.Parallel()
	const index, queries = "bg", 400
	url, c, good, bad := gateSetup(t, index, queries, time.Millisecond, func(cfg *node.Config) { cfg.GateWait = time.Nanosecond })
	nf := []string{"--nats", url}
	ctx := context.Background()
	before, err := c.Pipeline(ctx, index)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	act := startCLI(t, append([]string{"plugin", "activate", index, "boost", good}, nf...)...)
	waitFor(t, time.Minute, "the CLI to say the gate runs on", func() (bool, string) {
		s := act.stderr.String()
		return strings.Contains(s, "(Ctrl-C stops waiting; the gate goes on)"), s
	})
	if s := act.stderr.String(); !strings.Contains(s, `the relevance gate of "bg" is running on plugin boost sha256:`+api.ShortDigest(good)) ||
		!strings.Contains(s, "goes live by itself if it passes (quarry plugin show bg boost shows the outcome)") {
		t.Fatal(s)
	}
	// Its progress rises, in plugin ls (client and CLI).
	progress := func() *api.GateProgress {
		l, err := c.Plugins(ctx, index)
		if err != nil {
			t.Fatal(err)
		}
		return l.Gate
	}
	var first api.GateProgress
	waitFor(t, time.Minute, "the gate's progress", func() (bool, string) {
		p := progress()
		if p == nil {
			return false, "no gate running"
		}
		first = *p
		return p.Done > 0, fmt.Sprint(*p)
	})
	if first.Plugin != "boost" || first.Digest != good || first.Total != queries || first.Set != "big" || !strings.HasPrefix(first.What, "plugin activate boost") {
		t.Fatalf("progress: %+v", first)
	}
	waitFor(t, time.Minute, "the gate's progress to rise", func() (bool, string) {
		p := progress()
		return p != nil && p.Done > first.Done, fmt.Sprint(p)
	})
	if out, errOut, code := cli(t, "", append([]string{"plugin", "show", index, "boost"}, nf...)...); code != 0 || !strings.Contains(out, "relevance gate running on sha256:"+api.ShortDigest(good)+": ") || !strings.Contains(out, fmt.Sprintf(" of %d queries, ", queries)) {
		t.Fatalf("plugin show while the gate runs: %d\n%s%s", code, out, errOut)
	}
	// Another gated change of the index is refused, naming the gate and
	// its progress.
	_, err = c.ActivatePlugin(ctx, index, "boost", bad)
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "a relevance gate is running on plugin boost sha256:"+api.ShortDigest(good)) || !strings.Contains(err.Error(), fmt.Sprintf(" of %d queries", queries)) {
		t.Fatalf("a second activation while the gate runs: %v", err)
	}
	if _, err := c.SetPipeline(ctx, index, &api.PipelineSpec{}); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("a pipeline set while the gate runs: %v", err)
	}
	// Ctrl-C stops the waiting, not the gate.
	if code := act.stop(t); code != 1 || !strings.Contains(act.stderr.String(), "stopped waiting; the relevance gate goes on") {
		t.Fatalf("Ctrl-C: exit %d\n%s", code, act.stderr)
	}
	p := progress()
	if p == nil {
		t.Fatal("the gate stopped with the CLI's waiting")
	}
	spec, err := c.WaitGate(ctx, index, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a gate over %d queries took %s", queries, time.Since(start).Round(time.Millisecond))
	if len(spec.Rankers) != 1 || spec.Rankers[0].Digest != good || spec.Revision <= before.Revision || spec.Gate == nil || !spec.Gate.Passed {
		t.Fatalf("the version did not go live by itself: %+v", spec)
	}
	if g := versionGate(t, c, index, good); g == nil || !g.Passed || g.Sets[0].Queries != queries {
		t.Fatalf("the gate's result with the version: %+v", g)
	}
	if ev := gateEvent(t, c, index, api.EventGateLive); ev == nil || ev.Plugin != "boost" || ev.Version != api.ShortDigest(good) || ev.Gate == nil || !strings.Contains(ev.Reason, "ndcg@10 must not drop") {
		t.Fatalf("the event: %+v", ev)
	}
	if p := progress(); p != nil {
		t.Fatalf("a gate still runs: %+v", p)
	}

	// The worse version: the CLI waits to the end, saying how far the gate
	// got, and prints the refusal; nothing changes.
	out, errOut, code := cli(t, "", append([]string{"plugin", "activate", index, "boost", bad}, nf...)...)
	if code != 1 || !strings.Contains(errOut, "relevance gate: ") || !strings.Contains(errOut, "(Ctrl-C stops waiting; the gate goes on)") ||
		!strings.Contains(errOut, "refused by the relevance gate of \"bg\"") || !strings.Contains(errOut, "FAILED") {
		t.Fatalf("activating the worse version: exit %d\n%s%s", code, out, errOut)
	}
	if g := versionGate(t, c, index, bad); g == nil || g.Passed || g.Sets[0].Diff >= 0 {
		t.Fatalf("the refusal with the version: %+v", g)
	}
	if ev := gateEvent(t, c, index, api.EventGateRefused); ev == nil || ev.Code != api.CodeGateFailed || ev.Version != api.ShortDigest(bad) || ev.Gate == nil || ev.Gate.Passed {
		t.Fatalf("the refusal's event: %+v", ev)
	}
	if now, err := c.Pipeline(ctx, index); err != nil || now.Revision != spec.Revision || now.Rankers[0].Digest != good {
		t.Fatalf("a refused version changed the pipeline: %+v %v", now, err)
	}
}

// --gate-timeout bounds a gate job: one cut off by it refuses the change
// with a timeout (over HTTP the activation first answers 202,
// gate_running), records why with the version and as a plugin event, and
// nothing goes live.
func TestGateTimeout(t *testing.T) {
	t.Parallel()
	const index, queries, timeout = "gto", 400, 300 * time.Millisecond
	_, c, good, _ := gateSetup(t, index, queries, time.Millisecond, func(cfg *node.Config) {
		cfg.GateWait, cfg.GateTimeout = time.Nanosecond, timeout
	})
	ctx := context.Background()
	srv := httptest.NewServer(httpapi.Handler(c, httpapi.Options{}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/indexes/"+index+"/plugins/boost/activate?digest="+good, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var he struct{ Error api.Error }
	if resp.StatusCode != 202 || json.Unmarshal(b, &he) != nil || he.Error.Code != api.CodeGateRunning || he.Error.Running == nil || he.Error.Running.Digest != good {
		t.Fatalf("HTTP activate: %d %s", resp.StatusCode, b)
	}
	_, err = c.WaitGate(ctx, index, he.Error.Running, nil)
	if !errors.Is(err, api.ErrTimeout) || !strings.Contains(err.Error(), "ran out of its time, 300ms (quarry serve --gate-timeout)") {
		t.Fatalf("the gate past its time: %v", err)
	}
	if g := versionGate(t, c, index, good); g == nil || g.Passed || !strings.Contains(g.Sets[0].Error, "deadline exceeded") {
		t.Fatalf("the gate's result with the version: %+v", g)
	}
	if ev := gateEvent(t, c, index, api.EventGateStopped); ev == nil || ev.Code != api.CodeTimeout {
		t.Fatalf("the event: %+v", ev)
	}
	if spec, err := c.Pipeline(ctx, index); err != nil || len(spec.Rankers) != 0 {
		t.Fatalf("a gate cut off by its time put the version live: %+v %v", spec, err)
	}
}
