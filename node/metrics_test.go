package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// TestMetrics scrapes /metrics from a node running every role (its HTTP
// API and its --metrics listener) after searches through a pipeline of
// real plugins, a bad request, a search of an unknown index, a bulk ingest
// with its snapshot, a delete and a malformed document on the stream. The
// output must parse and pass promtool's linter, and the key series must
// hold what happened.
func TestMetrics(t *testing.T) {
	t.Parallel()
	path := writePipeline(t, map[string][]byte{
		"suffix.wasm": wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat"),
		"trap.wasm":   wasmtest.WAT(t, trapWAT),
		"ltr.wasm":    wasmtest.WATFile(t, "../plugins/testdata/ltr.wat"),
	}, broker.PipelineFile{
		// trap traps on "noodles" (fail-open: skipped), before suffix
		// makes it "noodles spicy".
		Rewriters: []broker.StepFile{{Plugin: "trap", Wasm: "trap.wasm", Policy: api.FailOpen}, {Plugin: "suffix", Wasm: "suffix.wasm"}},
		Rankers:   []broker.StepFile{{Plugin: "ltr", Wasm: "ltr.wasm", Fields: []string{"price"}, RerankDepth: 20}},
	})
	ctx := context.Background()
	n, err := Start(ctx, Config{DataDir: t.TempDir(), NATSPort: -1, HTTPAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{},
		// The searcher keeps replicas of its own, so that the snapshot
		// is swapped in (the swap series below).
		SeparateReplicas: true,
		Broker:           &broker.Config{}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	loadCatalogSnapshot(t, n, "menu", 2, catalogNDJSON(t, 200))
	// Straight into the broker: the registry's validation would refuse
	// the trap, and the ltr fixture's NaN on documents without a price.
	pl, err := broker.LoadPipelineFile(ctx, mustRuntime(t), path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n.Broker.SetPipeline("menu", pl)

	const searches = 5
	for range searches {
		if status, body := post(t, "http://"+n.HTTPAddr+"/v1/indexes/menu/search", `{"q":"noodles","size":5}`); status != 200 {
			t.Fatalf("search: %d %s", status, body)
		}
	}
	if status, _ := post(t, "http://"+n.HTTPAddr+"/v1/indexes/menu/search", `{"q":`); status != 400 {
		t.Fatalf("malformed search: status %d, want 400", status)
	}
	if status, _ := post(t, "http://"+n.HTTPAddr+"/v1/indexes/nosuch/search", `{"q":"x"}`); status != 404 {
		t.Fatalf("search of an unknown index: status %d, want 404", status)
	}
	if _, err := n.Client().Delete(ctx, "menu", "no-such-doc"); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(n.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, subject.Doc("menu", 0, "bad"), []byte("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	// A new generation with every message: the searcher swaps it in.
	snap, err := n.Client().Snapshot(ctx, "menu", ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	gen := float64(snap.Generation)

	docs := float64(200)
	checks := []struct {
		name   string
		labels map[string]string
		ok     func(float64) bool
		want   string
	}{
		// Broker: requests by outcome, stage and step histograms.
		{"quarry_broker_requests_total", map[string]string{"index": "menu", "outcome": "ok"}, equal(searches), "searches"},
		{"quarry_broker_requests_total", map[string]string{"index": "menu", "outcome": "bad_request"}, equal(1), "1"},
		{"quarry_broker_requests_total", map[string]string{"index": "_unknown", "outcome": "not_found"}, equal(1), "1"},
		{"quarry_broker_requests_total", map[string]string{"index": "nosuch"}, equal(-1), "no series"},
		{"quarry_broker_request_duration_seconds", map[string]string{"index": "menu"}, equal(searches + 1), "an observation per request"},
		{"quarry_broker_stage_duration_seconds", map[string]string{"index": "menu", "stage": "decode"}, equal(searches), "searches"},
		{"quarry_broker_stage_duration_seconds", map[string]string{"index": "menu", "stage": "rewrite"}, atLeast(searches), ">= searches"},
		{"quarry_broker_stage_duration_seconds", map[string]string{"index": "menu", "stage": "plan"}, atLeast(searches), ">= searches"},
		{"quarry_broker_stage_duration_seconds", map[string]string{"index": "menu", "stage": "fan_out"}, atLeast(searches), ">= searches"},
		{"quarry_broker_stage_duration_seconds", map[string]string{"index": "menu", "stage": "merge"}, atLeast(searches), ">= searches"},
		{"quarry_broker_stage_duration_seconds", map[string]string{"index": "menu", "stage": "rank"}, atLeast(searches), ">= searches"},
		{"quarry_broker_stage_duration_seconds", map[string]string{"index": "menu", "stage": "encode"}, atLeast(searches), ">= searches"},
		{"quarry_broker_step_duration_seconds", map[string]string{"index": "menu", "kind": "rewriter", "plugin": "suffix"}, atLeast(searches), ">= searches"},
		{"quarry_broker_step_duration_seconds", map[string]string{"index": "menu", "kind": "ranker", "plugin": "ltr"}, atLeast(searches), ">= searches"},
		{"quarry_broker_partial_results_total", map[string]string{"index": "menu"}, equal(0), "0"},
		{"quarry_broker_in_flight_requests", nil, equal(0), "0"},
		{"quarry_broker_in_flight_limit", nil, equal(1024), "1024"},
		{"quarry_broker_shard_requests_total", nil, atLeast(2 * searches), ">= 2 shards × searches"},
		{"quarry_broker_hedges_total", nil, atLeast(0), "present"},
		{"quarry_broker_hedges_won_total", nil, atLeast(0), "present"},
		// Plugins: calls, errors by kind, latency, instances, memory.
		{"quarry_plugin_calls_total", map[string]string{"index": "menu", "plugin": "suffix"}, atLeast(searches), ">= searches"},
		{"quarry_plugin_errors_total", map[string]string{"index": "menu", "plugin": "suffix"}, equal(0), "0"},
		{"quarry_plugin_errors_total", map[string]string{"index": "menu", "plugin": "trap", "kind": "trap"}, atLeast(searches), ">= searches"},
		{"quarry_plugin_call_duration_seconds", map[string]string{"index": "menu", "plugin": "ltr"}, atLeast(searches), ">= searches"},
		{"quarry_plugin_instances", map[string]string{"index": "menu", "plugin": "suffix"}, atLeast(1), ">= 1"},
		{"quarry_plugin_memory_bytes", map[string]string{"index": "menu", "plugin": "ltr"}, atLeast(4 * 65536), ">= 4 pages an instance"},
		// Searcher: per shard requests, latency, generation, lag, swaps.
		{"quarry_searcher_requests_total", map[string]string{"index": "menu", "shard": "0", "phase": "search", "outcome": "ok"}, atLeast(searches), ">= searches"},
		{"quarry_searcher_search_duration_seconds", map[string]string{"index": "menu", "shard": "1"}, atLeast(searches), ">= searches"},
		{"quarry_searcher_shard_generation", map[string]string{"index": "menu", "shard": "0"}, equal(gen), "the last snapshot's"},
		{"quarry_searcher_shard_generation", map[string]string{"index": "menu", "shard": "1"}, equal(gen), "the last snapshot's"},
		{"quarry_searcher_generation_swaps_total", map[string]string{"index": "menu"}, atLeast(2), ">= 1 a shard"},
		{"quarry_searcher_replay_lag_messages", map[string]string{"index": "menu"}, equal(0), "0"},
		{"quarry_searcher_shard_documents", map[string]string{"index": "menu"}, equal(docs), "every document"},
		{"quarry_searcher_shard_segments", map[string]string{"index": "menu", "where": "file"}, atLeast(1), ">= 1"},
		{"quarry_searcher_shard_segments", map[string]string{"index": "menu", "where": "memory"}, atLeast(0), "present"},
		{"quarry_searcher_shard_reindexed_documents_total", map[string]string{"index": "menu"}, atLeast(0), "present"},
		{"quarry_searcher_shard_points_in_time", map[string]string{"index": "menu"}, atLeast(0), "present"},
		// The ranker's field, asked by the searches: its column made on
		// the new generation before the swap.
		{"quarry_searcher_shard_column_bytes", map[string]string{"index": "menu"}, atLeast(1), "> 0"},
		{"quarry_searcher_shard_column_hits_total", map[string]string{"index": "menu"}, atLeast(0), "present"},
		{"quarry_searcher_requests_refused_total", map[string]string{"reason": "bad_request"}, equal(0), "0"},
		{"quarry_searcher_queue_wait_seconds", nil, atLeast(2 * searches), ">= 2 shards × searches"},
		{"quarry_searcher_heavy_waited_seconds_total", nil, atLeast(0), "present"},
		// Indexer: documents, stream lag, snapshots.
		{"quarry_indexer_documents_total", map[string]string{"index": "menu", "result": "indexed"}, equal(docs), "every document"},
		{"quarry_indexer_documents_total", map[string]string{"index": "menu", "result": "deleted"}, equal(1), "1"},
		{"quarry_indexer_documents_total", map[string]string{"index": "menu", "result": "rejected"}, equal(1), "1"},
		{"quarry_indexer_stream_lag_messages", map[string]string{"index": "menu"}, equal(0), "0"},
		{"quarry_indexer_snapshots_total", map[string]string{"index": "menu", "result": "ok"}, atLeast(2), ">= 2 (the bulk's and ours)"},
		{"quarry_indexer_snapshot_duration_seconds", map[string]string{"index": "menu"}, atLeast(2), ">= 2"},
		{"quarry_indexer_snapshot_size_bytes", map[string]string{"index": "menu"}, equal(float64(snap.Bytes)), "the last snapshot's"},
		{"quarry_indexer_snapshot_generation", map[string]string{"index": "menu"}, equal(gen), "the last snapshot's"},
		// Go runtime and process.
		{"go_goroutines", nil, atLeast(1), ">= 1"},
		{"process_resident_memory_bytes", nil, atLeast(1), "> 0"},
	}
	for _, addr := range []struct{ name, url string }{
		{"http api", "http://" + n.HTTPAddr + "/metrics"},
		{"metrics listener", "http://" + n.MetricsAddr + "/metrics"},
	} {
		t.Run(addr.name, func(t *testing.T) {
			// The stream is applied asynchronously: wait for the last
			// messages before judging.
			var fams map[string]*dto.MetricFamily
			testwait.UntilErr(t, 30*time.Second, "the searcher's generation metric", func() error {
				fams = scrape(t, addr.url)
				if got := sum(fams, "quarry_searcher_shard_generation", nil); got != 2*gen {
					return fmt.Errorf("quarry_searcher_shard_generation sums to %g, want %g", got, 2*gen)
				}
				return nil
			})
			for _, c := range checks {
				if got := sum(fams, c.name, c.labels); !c.ok(got) {
					t.Errorf("%s %v = %g, want %s", c.name, c.labels, got, c.want)
				}
			}
		})
	}
}

func atLeast(v float64) func(float64) bool { return func(got float64) bool { return got >= v } }
func equal(v float64) func(float64) bool   { return func(got float64) bool { return got == v } }

// post sends a JSON body and returns the status and the body.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape reads /metrics at url, fails the test on any problem the
// Prometheus text parser or promtool's linter finds, and returns the
// metric families.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("GET %s: Content-Type %q, want the text format", url, ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("lint %s: %v", url, err)
	}
	for _, p := range problems {
		t.Errorf("lint %s: %s: %s", url, p.Metric, p.Text)
	}
	return fams
}

// sum adds up the series of a family whose labels include labels (a
// histogram's sample counts), or returns -1 if there is none.
func sum(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	total, found := 0.0, false
series:
	for _, m := range fams[name].GetMetric() {
		for k, v := range labels {
			if label(m, k) != v {
				continue series
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		default:
			panic(fmt.Sprintf("%s: unexpected metric type", name))
		}
	}
	if !found {
		return -1
	}
	return total
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
